package sandbox

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/render"
)

// TestAgentArgvCommand: a Command override replaces claude and its per-run arguments, and
// nothing else: the options of the runspec's agent argv are kept as they are.
func TestAgentArgvCommand(t *testing.T) {
	s := &Sandbox{
		Project: paths.Project{Workspace: t.TempDir(), Dir: t.TempDir()},
		Spec: &render.RunSpec{Agent: render.RunCommand{
			Args:    []string{"create", "--name", "agent-p-" + render.RunToken, "--user", "1000:1000"},
			Image:   "abox-agent-p:1",
			Command: []string{"claude", "--output-format", "stream-json"},
		}},
	}
	got, err := s.agentArgv(Options{Command: []string{"perl", "-e", "print 1"}, Prompt: "ignored"}, &Outcome{ID: "0123abcd"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"create", "--name", "agent-p-0123abcd", "--user", "1000:1000", "abox-agent-p:1", "perl", "-e", "print 1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("agentArgv with Command (-want +got):\n%s", diff)
	}
}
