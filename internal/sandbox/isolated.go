package sandbox

import (
	"errors"
	"fmt"
	"os"

	"github.com/aboxhq/abox/internal/render"
)

// prepareWorkspace readies what the agent will see at /workspace: the masks of a live run
// ([Sandbox.prepareMasks]), or the clone of an isolated one, which must be a directory of its
// own in the project's clones. An isolated run takes no live lock: its agent cannot reach the
// workspace, so it cannot move another run's masked content, nor have its own moved.
func (s *Sandbox) prepareWorkspace(o Options, out *Outcome) error {
	if !o.Isolated {
		return s.prepareMasks(o, out)
	}
	if o.ID == "" {
		return fmt.Errorf("%w: an isolated run needs its clone's id", ErrBoundary)
	}
	st, err := os.Lstat(s.Project.Clone(o.ID))
	if err != nil || !st.IsDir() {
		return fmt.Errorf("%w: the run's clone %s is not a directory: %v", ErrBoundary, s.Project.Clone(o.ID), err)
	}
	return nil
}

// isolate replaces the live workspace's mount in argv, the agent's for run id, by the runspec's
// isolated one. It fails closed: the live mount must be the first --mount and appear once.
func (s *Sandbox) isolate(argv []string, id string) ([]string, error) {
	live := render.WorkspaceMount(s.Project.Workspace).Arg()
	isolated := replaceRun([]string{s.Spec.Isolated}, id)[0]
	if want := render.IsolatedMount(s.Project.Clone(id)).Arg(); isolated != want {
		return nil, fmt.Errorf("runspec.json's isolated workspace is %q, not the run's clone %q", isolated, want)
	}
	at, first := -1, true
	for i := 0; i+1 < len(argv); i++ {
		if argv[i] != "--mount" {
			continue
		}
		if argv[i+1] == live {
			if at >= 0 || !first {
				return nil, errors.New("the workspace's mount is not the agent's first, single --mount in runspec.json")
			}
			at = i + 1
		}
		first = false
	}
	if at < 0 {
		return nil, errors.New("runspec.json's agent argv does not mount the workspace")
	}
	out := append([]string{}, argv...)
	out[at] = isolated
	return out, nil
}
