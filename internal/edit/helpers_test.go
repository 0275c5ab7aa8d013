package edit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/docker/dockertest"
	"github.com/aboxhq/abox/internal/edit"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/render"
)

const base = "version: 1\nproject: p  # keep me\nprofile: default\negress:\n  - a.example.com\n"

// toolkit is a Docker MCP Toolkit catalog of two servers, one reading a secret.
const toolkit = `version: 3
name: docker-mcp
registry:
  duckduckgo:
    type: server
    image: mcp/duckduckgo@sha256:1111111111111111111111111111111111111111111111111111111111111111
    tools:
      - name: search
      - name: fetch_content
  github-official:
    type: server
    image: ghcr.io/github/github-mcp-server@sha256:2222222222222222222222222222222222222222222222222222222222222222
    secrets:
      - name: github.personal_access_token
        env: GITHUB_PERSONAL_ACCESS_TOKEN
    tools:
      - name: list_issues
`

// fixture is a loaded project whose workspace manifest is manifest, with the catalog above in
// the MCP home it returns.
func fixture(t *testing.T, manifest string) (*project.Project, string) {
	t.Helper()
	root := t.TempDir()
	env := map[string]string{"HOME": root, "ABOX_CONFIG_HOME": filepath.Join(root, "cfg"), "ABOX_STATE_HOME": filepath.Join(root, "state")}
	ps, err := paths.FromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(root, "work")
	mcpHome := filepath.Join(root, "mcp")
	writeFile(t, filepath.Join(ws, "agentbox.yaml"), manifest)
	writeFile(t, filepath.Join(mcpHome, "catalogs", "docker-mcp.yaml"), toolkit)
	p, err := project.Load(ws, ps)
	if err != nil {
		t.Fatal(err)
	}
	return p, mcpHome
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// approve records the workspace manifest as approved, as `abox up` does.
func approve(t *testing.T, p *project.Project) {
	t.Helper()
	writeFile(t, p.State.Approved(), string(p.Raw))
}

// writePolicy renders a netd policy whose mandatory entries are mandatory.
func writePolicy(t *testing.T, p *project.Project, mandatory ...string) {
	t.Helper()
	pol := policy.Netd{Version: policy.Version, Project: "p", Egress: append([]string{"a.example.com"}, mandatory...),
		Mandatory: mandatory, DefaultPorts: []int{443}}
	data, err := json.Marshal(pol)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(p.State.Artifacts(), render.NetdDir, policy.File), string(data))
}

// recorder is an [edit.Env] whose hooks record what they are told.
type recorder struct {
	renders          []string // the manifest each render saw
	warns, progress  []string
	questions        []string
	renderErr, ready error
	answer           bool
}

func (r *recorder) env(fake *dockertest.Fake, mcpHome string) edit.Env {
	return edit.Env{
		Docker: docker.NewClient(fake, nil),
		Render: func(p *project.Project) error {
			r.renders = append(r.renders, string(p.Raw))
			return r.renderErr
		},
		Ready:    func(context.Context) error { return r.ready },
		Warn:     func(f string, a ...any) { r.warns = append(r.warns, fmt.Sprintf(f, a...)) },
		Progress: func(f string, a ...any) { r.progress = append(r.progress, fmt.Sprintf(f, a...)) },
		MCPHome:  mcpHome,
	}
}

// confirming is r's env with a terminal whose user answers r.answer.
func (r *recorder) confirming(fake *dockertest.Fake, mcpHome string) edit.Env {
	env := r.env(fake, mcpHome)
	env.Confirm = func(q string) bool {
		r.questions = append(r.questions, q)
		return r.answer
	}
	return env
}

// noSandbox answers docker's listing of the project's netd containers with none.
func noSandbox(fake *dockertest.Fake, p *project.Project) {
	fake.On(psArgs(p), docker.Result{})
}

func psArgs(p *project.Project) string {
	return "ps --no-trunc --format {{json .}} --filter label=abox.hash=" + p.State.Hash + " --filter label=abox.role=netd"
}

var errDown = errors.New("daemon down")
