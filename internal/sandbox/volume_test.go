package sandbox

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/docker/dockertest"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/render"
)

func volumeFixture(t *testing.T, user string) (*dockertest.Fake, *docker.Client, paths.Project, *render.RunSpec) {
	fake := dockertest.New(t)
	rs := &render.RunSpec{ClaudeVol: "abox-claude-h",
		Agent: render.RunCommand{Args: []string{"create", "--user", user}},
		Reown: render.RunCommand{Args: []string{"run", "--rm", "--network", "none", "reown"}}}
	return fake, docker.NewClient(fake, nil), paths.Project{Dir: t.TempDir()}, rs
}

func noProgress(string, ...any) {}

// TestOwnClaudeVolume: a volume filled for another owner is re-owned and the new owner
// recorded; a new volume, or one already the agent's, is not touched.
func TestOwnClaudeVolume(t *testing.T) {
	ctx := context.Background()
	t.Run("legacy owner, changed uid", func(t *testing.T) {
		fake, d, proj, rs := volumeFixture(t, "1001:1001")
		fake.On("run --rm --network none reown", docker.Result{})
		if err := OwnClaudeVolume(ctx, d, proj, rs, true, noProgress); err != nil {
			t.Fatal(err)
		}
		if data, _ := os.ReadFile(proj.VolumeOwner()); string(data) != "1001:1001\n" {
			t.Errorf("volume-owner = %q", data)
		}
		// Recorded: a second up re-owns nothing (the fake fails any call not registered).
		_, d2, _, _ := volumeFixture(t, "1001:1001")
		if err := OwnClaudeVolume(ctx, d2, proj, rs, true, noProgress); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("new volume", func(t *testing.T) {
		_, d, proj, rs := volumeFixture(t, "1001:1001")
		if err := OwnClaudeVolume(ctx, d, proj, rs, false, noProgress); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("legacy owner, same uid", func(t *testing.T) {
		_, d, proj, rs := volumeFixture(t, "1000:1000")
		if err := OwnClaudeVolume(ctx, d, proj, rs, true, noProgress); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("reown fails", func(t *testing.T) {
		fake, d, proj, rs := volumeFixture(t, "1001:1001")
		fake.On("run", docker.Result{ExitCode: 1, Stderr: []byte("no image")})
		var re *ReownError
		if err := OwnClaudeVolume(ctx, d, proj, rs, true, noProgress); !errors.As(err, &re) || re.Volume != "abox-claude-h" {
			t.Fatalf("OwnClaudeVolume = %v, want a ReownError", err)
		}
		if _, err := os.Stat(proj.VolumeOwner()); !os.IsNotExist(err) {
			t.Errorf("the owner was recorded although the volume was not re-owned: %v", err)
		}
	})
	t.Run("no numeric user", func(t *testing.T) {
		_, d, proj, rs := volumeFixture(t, "agent")
		if err := OwnClaudeVolume(ctx, d, proj, rs, true, noProgress); !errors.Is(err, ErrNoAgentUser) {
			t.Fatalf("OwnClaudeVolume = %v, want ErrNoAgentUser", err)
		}
	})
}

func TestCreateClaudeVolume(t *testing.T) {
	ctx := context.Background()
	fake, d, _, rs := volumeFixture(t, "1000:1000")
	fake.On("volume inspect", docker.Result{ExitCode: 1, Stderr: []byte("Error: No such volume: abox-claude-h\n")})
	fake.On("volume create", docker.Result{Stdout: []byte("abox-claude-h\n")})
	if existed, err := CreateClaudeVolume(ctx, d, rs, map[string]string{"abox.managed": "true"}); err != nil || existed {
		t.Fatalf("CreateClaudeVolume = %v, %v; want a new volume", existed, err)
	}
	fake, d, _, rs = volumeFixture(t, "1000:1000")
	fake.On("volume inspect", docker.Result{ExitCode: 1, Stderr: []byte("Cannot connect to the Docker daemon")})
	if _, err := CreateClaudeVolume(ctx, d, rs, nil); err == nil {
		t.Fatal("CreateClaudeVolume ignored a failed inspect")
	}
}
