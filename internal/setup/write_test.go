package setup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/render"
)

// writeHooks renders as `abox render` would build the spec, recording each render and line of
// progress.
type writeHooks struct {
	renders  []*project.Project
	progress []string
	spec     func(*project.Project) (render.Spec, error)
}

func (w *writeHooks) hooks() Hooks {
	return Hooks{
		Spec:     w.spec,
		Render:   func(p *project.Project) error { w.renders = append(w.renders, p); return nil },
		Progress: func(f string, a ...any) { w.progress = append(w.progress, fmt.Sprintf(f, a...)) },
	}
}

func testPaths(t *testing.T) paths.Paths {
	t.Helper()
	root := t.TempDir()
	env := map[string]string{"HOME": root, "ABOX_CONFIG_HOME": filepath.Join(root, "cfg"), "ABOX_STATE_HOME": filepath.Join(root, "state")}
	ps, err := paths.FromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// TestWrite: the answers are rendered before anything is written, then config.yaml,
// agentbox.yaml and the artifacts are, and the report says what was.
func TestWrite(t *testing.T) {
	ws := filepath.Join(t.TempDir(), "new")
	st, _ := load(t, ws)
	id := 1000
	st.Config.Agent.UID, st.Config.Agent.GID = &id, &id // the workspace's owner may be root here
	ps := testPaths(t)
	var w writeHooks
	w.spec = func(p *project.Project) (render.Spec, error) {
		if _, err := os.Stat(ws); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the workspace exists before the answers were rendered: %v", err)
		}
		return p.Spec(context.Background(), project.Host{Version: "test", Home: t.TempDir(), MCPHome: t.TempDir()})
	}
	ans := st.Defaults(manifest.InitArgs{Project: "p", Profile: "work", Servers: []string{"notes"}})
	rep, err := st.Write(ans, ps, w.hooks())
	if err != nil {
		t.Fatalf("Write = %v", err)
	}
	if len(w.progress) != 1 || !strings.HasPrefix(w.progress[0], "new profile work (gateway port ") {
		t.Errorf("progress = %q", w.progress)
	}
	if len(w.renders) != 1 || w.renders[0].Manifest.Project != "p" || w.renders[0].State != ps.Project(ws) {
		t.Fatalf("renders = %+v, want one of project p", w.renders)
	}
	if cfg, err := os.ReadFile(ps.ConfigFile()); err != nil || !strings.Contains(string(cfg), "work:") {
		t.Errorf("config.yaml = %q, %v; want the new profile", cfg, err)
	}
	if _, err := os.Stat(filepath.Join(ws, manifest.FileName)); err != nil || rep.Path != filepath.Join(ws, manifest.FileName) || rep.Updated {
		t.Errorf("report %+v; agentbox.yaml: %v", rep, err)
	}
}

// TestWriteRefuses: answers that make an invalid manifest, or one that does not render, write
// nothing.
func TestWriteRefuses(t *testing.T) {
	for _, c := range []struct {
		name  string
		masks []string
		want  error
	}{
		{"invalid answers", []string{"/etc/passwd"}, ErrAnswers},
		{"no render", nil, ErrRender},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws := filepath.Join(t.TempDir(), "new")
			st, _ := load(t, ws)
			ps := testPaths(t)
			w := writeHooks{spec: func(*project.Project) (render.Spec, error) { return render.Spec{}, nil }}
			ans := st.Defaults(manifest.InitArgs{})
			ans.Masks = c.masks
			if _, err := st.Write(ans, ps, w.hooks()); !errors.Is(err, c.want) {
				t.Fatalf("Write = %v, want %v", err, c.want)
			}
			if _, err := os.Stat(ws); !errors.Is(err, os.ErrNotExist) || len(w.renders) != 0 {
				t.Errorf("the workspace was written (%v) or rendered (%d)", err, len(w.renders))
			}
			if _, err := os.Stat(ps.ConfigFile()); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("config.yaml was written: %v", err)
			}
		})
	}
}
