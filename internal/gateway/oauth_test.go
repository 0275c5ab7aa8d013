package gateway

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/docker/dockertest"
)

// TestOAuth: Docker Desktop lists or authorizes; another daemon is refused before its mcp
// plugin is asked anything (the fake has no reply for it).
func TestOAuth(t *testing.T) {
	engine := dockertest.New(t)
	engine.On("info --format {{.OperatingSystem}}", docker.Result{Stdout: []byte("Debian GNU/Linux 12 (bookworm)\n")})
	var de *DesktopOnlyError
	err := OAuth(context.Background(), docker.NewClient(engine, nil), "", false, &bytes.Buffer{}, &bytes.Buffer{})
	if !errors.As(err, &de) || de.OS != "Debian GNU/Linux 12 (bookworm)" {
		t.Errorf("OAuth on Docker Engine = %v, want a DesktopOnlyError naming its OS", err)
	}

	for provider, argv := range map[string]string{"": "mcp oauth ls", "github": "mcp oauth authorize github"} {
		fake := dockertest.New(t)
		fake.On("info --format {{.OperatingSystem}}", docker.Result{Stdout: []byte("Docker Desktop\n")})
		fake.On(argv, docker.Result{Stdout: []byte("github | authorized\n")})
		var out bytes.Buffer
		if err := OAuth(context.Background(), docker.NewClient(fake, nil), provider, false, &out, &bytes.Buffer{}); err != nil {
			t.Errorf("OAuth(%q) = %v", provider, err)
		}
		if out.String() != "github | authorized\n" {
			t.Errorf("OAuth(%q) printed %q", provider, out.String())
		}
	}
}
