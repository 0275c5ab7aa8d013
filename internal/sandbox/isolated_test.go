package sandbox

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/render"
)

// isolatedSandbox is a sandbox whose runspec mounts the workspace first, as render writes it.
func isolatedSandbox(t *testing.T) *Sandbox {
	p := paths.Paths{State: t.TempDir()}.Project(t.TempDir())
	live := render.WorkspaceMount(p.Workspace).Arg()
	return &Sandbox{
		Project: p,
		Spec: &render.RunSpec{
			Agent: render.RunCommand{
				Args:  []string{"create", "--name", "agent-p-" + render.RunToken, "--mount", live, "--mount", "type=volume,source=v,target=/home/agent/.claude"},
				Image: "abox-agent-p:1", Command: []string{"claude"},
			},
			Isolated: render.IsolatedMount(p.Clone(render.RunToken)).Arg(),
		},
	}
}

// TestIsolatedArgv: an isolated run's agent argv is the live one with exactly the workspace's
// mount replaced by the run's clone, and no workspace of the user's in it.
func TestIsolatedArgv(t *testing.T) {
	s := isolatedSandbox(t)
	got, err := s.agentArgv(Options{Prompt: "hi", Isolated: true, ID: "0123abcd"}, &Outcome{ID: "0123abcd"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"create", "--name", "agent-p-0123abcd",
		"--mount", "type=bind,source=" + s.Project.Clone("0123abcd") + ",target=/workspace",
		"--mount", "type=volume,source=v,target=/home/agent/.claude", "abox-agent-p:1", "claude", "-p", "hi"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("agentArgv (-want +got):\n%s", diff)
	}
	if strings.Contains(strings.Join(got, " "), "source="+s.Project.Workspace+",") {
		t.Errorf("the workspace is still mounted: %q", got)
	}
}

// TestIsolatedArgvFailsClosed: a runspec whose isolated mount is not the run's clone, or whose
// workspace mount is not the first and only one, refuses the run.
func TestIsolatedArgvFailsClosed(t *testing.T) {
	tests := []struct {
		name string
		edit func(s *Sandbox)
		want string
	}{
		{"isolated mount is the workspace", func(s *Sandbox) { s.Spec.Isolated = render.WorkspaceMount(s.Project.Workspace).Arg() }, "not the run's clone"},
		{"isolated mount is every clone", func(s *Sandbox) { s.Spec.Isolated = render.IsolatedMount(s.Project.Clones()).Arg() }, "not the run's clone"},
		{"isolated mount read-only", func(s *Sandbox) { s.Spec.Isolated += ",readonly" }, "not the run's clone"},
		{"workspace mounted twice", func(s *Sandbox) {
			s.Spec.Agent.Args = append(s.Spec.Agent.Args, "--mount", render.WorkspaceMount(s.Project.Workspace).Arg())
		}, "first, single"},
		{"workspace not first", func(s *Sandbox) {
			a := s.Spec.Agent.Args
			a[3], a[4], a[5], a[6] = a[5], a[6], a[3], a[4]
		}, "first, single"},
		{"no workspace", func(s *Sandbox) { s.Spec.Agent.Args = s.Spec.Agent.Args[:3] }, "does not mount the workspace"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := isolatedSandbox(t)
			tc.edit(s)
			_, err := s.agentArgv(Options{Prompt: "hi", Isolated: true, ID: "0123abcd"}, &Outcome{ID: "0123abcd"})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("agentArgv error = %v, want one saying %q", err, tc.want)
			}
		})
	}
}
