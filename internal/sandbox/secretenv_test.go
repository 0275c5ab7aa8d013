package sandbox

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/docker/dockertest"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/render"
)

// TestSecretEnvOnStdin: attached secrets reach `docker create` on its stdin, read with
// --env-file /dev/stdin before the image; no value is in any argv.
func TestSecretEnvOnStdin(t *testing.T) {
	const env = "API_KEY=fake-attached-value-42\n"
	s := &Sandbox{
		Project: paths.Project{Workspace: t.TempDir(), Dir: t.TempDir()},
		Spec: &render.RunSpec{Agent: render.RunCommand{
			Args: []string{"create", "--name", "agent-p-" + render.RunToken}, Image: "abox-agent-p:1", Command: []string{"claude"},
		}},
	}
	argv, err := s.agentArgv(Options{Prompt: "hi", SecretEnv: []byte(env)}, &Outcome{ID: "0123abcd"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"create", "--name", "agent-p-0123abcd", "--env-file", "/dev/stdin", "abox-agent-p:1", "claude", "-p", "hi"}
	if diff := cmp.Diff(want, argv); diff != "" {
		t.Errorf("agentArgv (-want +got):\n%s", diff)
	}
	fake := dockertest.New(t)
	fake.On("create", docker.Result{Stdout: []byte("c0ffee\n")})
	s.Docker = docker.NewClient(fake, nil)
	if err := s.createAgent(context.Background(), argv, []byte(env)); err != nil {
		t.Fatal(err)
	}
	if c := fake.Calls()[0]; string(c.Stdin) != env {
		t.Errorf("create's stdin = %q", c.Stdin)
	}
	if strings.Contains(fake.ArgvText(), "fake-attached-value-42") {
		t.Errorf("a secret reached an argv:\n%s", fake.ArgvText())
	}
	if got, _ := s.agentArgv(Options{Prompt: "hi"}, &Outcome{ID: "x"}); strings.Contains(strings.Join(got, " "), "--env-file") {
		t.Error("--env-file without attached secrets")
	}
}
