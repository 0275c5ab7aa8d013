package secrets

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/docker/dockertest"
)

func TestFileStore(t *testing.T) {
	ctx := context.Background()
	s := &FileStore{Dir: filepath.Join(t.TempDir(), "secrets")}
	if names, err := s.List(ctx); err != nil || len(names) != 0 {
		t.Errorf("List of no store = %v, %v", names, err)
	}
	if _, err := s.Value(ctx, "a.b"); !errors.Is(err, ErrNotStored) {
		t.Errorf("Value of nothing = %v", err)
	}
	if err := s.Set(ctx, "a.b", []byte(fakeValue)); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{s.Dir: 0o700, filepath.Join(s.Dir, "a.b"): 0o600} {
		if st, err := os.Stat(path); err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: %v, mode %v; want %v", path, err, st.Mode().Perm(), want)
		}
	}
	if v, err := s.Deliver(ctx, "a.b"); err != nil || string(v) != fakeValue {
		t.Errorf("Deliver = %q, %v", v, err)
	}
	if err := os.Chmod(s.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := s.Set(ctx, "c-d_e", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(s.Dir); st.Mode().Perm() != 0o700 {
		t.Errorf("a loosened store directory was not tightened: %v", st.Mode().Perm())
	}
	writeFile(t, filepath.Join(s.Dir, ".a.b.tmp-1"), "x", 0o600)
	if names, _ := s.List(ctx); !cmp.Equal(names, []string{"a.b", "c-d_e"}) {
		t.Errorf("List = %v", names)
	}
	for _, bad := range []string{"", "../x", "a/b", ".hidden", ".."} {
		if err := s.Set(ctx, bad, []byte("x")); err == nil {
			t.Errorf("Set(%q) was accepted", bad)
		}
	}
	if err := s.Set(ctx, "a.b", []byte("line\nbreak")); !errors.Is(err, ErrLineBreak) {
		t.Errorf("Set of a multi-line value = %v", err)
	}
	if err := s.Remove(ctx, "a.b"); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(ctx, "a.b"); err != nil {
		t.Errorf("removing a missing secret: %v", err)
	}
	if names, _ := s.List(ctx); !cmp.Equal(names, []string{"c-d_e"}) {
		t.Errorf("List after Remove = %v", names)
	}
}

// TestDesktopStore: values go over stdin only; references are se:// URIs; list strips the
// namespace.
func TestDesktopStore(t *testing.T) {
	ctx := context.Background()
	fake := dockertest.New(t)
	fake.On("mcp secret set a.b", docker.Result{})
	fake.On("mcp secret ls --json", docker.Result{Stdout: []byte(`[{"name":"docker/mcp/a.b","provider":"docker-desktop"},{"name":"other"},{"name":"bad name"}]`)})
	fake.On("mcp secret rm a.b", docker.Result{})
	s := &DesktopStore{Docker: docker.NewClient(fake, nil)}
	if err := s.Set(ctx, "a.b", []byte(fakeValue)); err != nil {
		t.Fatal(err)
	}
	if names, err := s.List(ctx); err != nil || !cmp.Equal(names, []string{"a.b", "other"}) {
		t.Errorf("List = %v, %v", names, err)
	}
	if _, err := s.Value(ctx, "a.b"); !errors.Is(err, ErrNotReadable) {
		t.Errorf("Value = %v, want ErrNotReadable", err)
	}
	if v, _ := s.Deliver(ctx, "a.b"); string(v) != "se://docker/mcp/a.b" {
		t.Errorf("Deliver = %q", v)
	}
	if err := s.Remove(ctx, "a.b"); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(ctx, "not-there"); err != nil {
		t.Errorf("Remove of a missing secret: %v", err)
	}
	if strings.Contains(fake.ArgvText(), fakeValue) {
		t.Errorf("the value reached an argv:\n%s", fake.ArgvText())
	}
	if c := fake.Calls()[0]; string(c.Stdin) != fakeValue {
		t.Errorf("set's stdin = %q, want the value without a newline", c.Stdin)
	}
}

func TestDetect(t *testing.T) {
	ctx := context.Background()
	version := func(platform string) docker.Result {
		return docker.Result{Stdout: []byte(`{"Client":{"Version":"28.2.2"},"Server":{"Version":"28.1.1","Platform":{"Name":"` + platform + `"}}}`)}
	}
	tests := []struct {
		name     string
		platform string
		mcp      *docker.Result
		want     string
		why      string
	}{
		{"engine", "Docker Engine - Community", nil, KindAbox, "Docker Engine 28.1.1, not Docker Desktop"},
		{"debian engine", "", nil, KindAbox, "not Docker Desktop"},
		{"desktop", "Docker Desktop 4.40.0 (187762)", &docker.Result{Stdout: []byte("[]")}, KindDesktop, "with `docker mcp`"},
		{"desktop without mcp", "Docker Desktop 4.40.0 (187762)", &docker.Result{ExitCode: 1, Stderr: []byte("docker: 'mcp' is not a docker command.")}, KindAbox, "`docker mcp secret ls` fails"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fake := dockertest.New(t)
			fake.On("version --format {{json .}}", version(tc.platform))
			if tc.mcp != nil {
				fake.On("mcp secret ls --json", *tc.mcp)
			}
			c, err := Detect(ctx, docker.NewClient(fake, nil), "/state/secrets")
			if err != nil || c.Store.Kind() != tc.want || !strings.Contains(c.Why, tc.why) {
				t.Errorf("Detect = %v %q, %v; want %s, %q", c.Store, c.Why, err, tc.want, tc.why)
			}
		})
	}
	fake := dockertest.New(t)
	fake.On("version", docker.Result{ExitCode: 1, Stdout: []byte(`{"Client":{"Version":"28"},"Server":null}`),
		Stderr: []byte("Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?")})
	_, err := Detect(ctx, docker.NewClient(fake, nil), "/state/secrets")
	if !errors.Is(err, ErrNoDaemon) || !errors.Is(err, docker.ErrDaemonUnreachable) {
		t.Errorf("Detect without a daemon = %v", err)
	}
}

// TestStoredNames: on Docker Engine the names are the abox store's files; without a daemon
// there is nothing to list, and the error says so.
func TestStoredNames(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := (&FileStore{Dir: dir}).Set(ctx, "a.token", []byte("v")); err != nil {
		t.Fatal(err)
	}
	fake := dockertest.New(t)
	fake.On("version --format {{json .}}", docker.Result{Stdout: []byte(`{"Client":{"Version":"28"},"Server":{"Version":"28.1.1","Platform":{"Name":""}}}`)})
	got, err := StoredNames(ctx, docker.NewClient(fake, nil), dir)
	if err != nil || len(got) != 1 || got[0] != "a.token" {
		t.Errorf("StoredNames = %q, %v; want a.token", got, err)
	}
	fake = dockertest.New(t)
	fake.On("version", docker.Result{ExitCode: 1, Stdout: []byte(`{"Client":{"Version":"28"},"Server":null}`),
		Stderr: []byte("Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?")})
	if got, err := StoredNames(ctx, docker.NewClient(fake, nil), dir); got != nil || !errors.Is(err, ErrNoDaemon) {
		t.Errorf("StoredNames without a daemon = %q, %v", got, err)
	}
}
