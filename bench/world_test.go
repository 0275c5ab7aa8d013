//go:build bench && e2e

package bench

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aboxhq/abox/e2e/harness"
	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/render"
)

// world is the benchmarks' fixed set-up on the real daemon: one harness world (its own network
// and profile), testsrv as srv.bench.test (HTTPS, DNS answering every name), the profile's
// gateway (the mcpstub, started by `abox up`), and two projects that differ only in the size of
// their allowlist.
type world struct {
	h     *harness.H
	srv   *harness.Server
	small *project // smallEntries allowlist entries
	big   *project // bigEntries
	gw    string   // the gateway container
	token string   // the gateway's bearer token, for the direct MCP baseline
	out   string   // where figures are written

	clientName string            // the plain client container, once started
	ids        map[string]string // container ids by name, see [world.containerID]
}

// project is one abox project of the world.
type project struct {
	name, dir, hash string
	bin             string // the abox binary that set it up and runs it
	spec            render.RunSpec
}

// Allowlist sizes compared by the start-cost figure.
const (
	smallEntries = 5
	bigEntries   = 500
)

// spawnedServer is the custom server the gateway runs in containers of its own.
const spawnedServer = "chatty"

// srvName is testsrv's alias, the name every bench connects to; it is always entry 0.
const srvName = "srv.bench.test"

func newWorld(t *testing.T) *world {
	w := newBareWorld(t)
	h := w.h
	w.small = w.addProject(t, "bench-small", h.Workspace, smallEntries, harness.AboxBinary(t))
	w.big = w.addProject(t, "bench-big", w.secondWorkspace(t, "big"), bigEntries, harness.AboxBinary(t))
	w.gw = gateway.Name(h.Profile)
	tok, err := gateway.ReadToken(filepath.Join(h.StateHome, "gateways", h.Profile))
	if err != nil {
		t.Fatal(err)
	}
	w.token = tok
	return w
}

// newBareWorld sets up the world's harness, testsrv and configuration, without projects.
func newBareWorld(t *testing.T) *world {
	h := harness.Setup(t)
	w := &world{h: h, out: outDir(t)}
	w.srv = h.StartServer(srvName)
	// The gateway stand-in that also spawns servers as containers, as docker/mcp-gateway does:
	// echo is one of its own; chatty a container of `mcpstub server --chatty`, which announces
	// changed tools after initialize as server-everything does.
	cfg := h.DefaultConfig()
	cfg.Gateway.Image = harness.ImageID(t, harness.MCPStubSpawnImage(t))
	h.WriteConfig(cfg)
	stub := harness.ImageID(t, harness.MCPStubImage(t))
	writeFile(t, filepath.Join(h.ConfigHome, "custom-servers.yaml"),
		"echo:\n  image: "+stub+"\n  pin: false\n  tools: [echo]\n"+
			spawnedServer+":\n  image: "+stub+"\n  pin: false\n  command: [server, --chatty]\n  tools: [env]\n")
	return w
}

// outDir is $ABOX_BENCH_OUT (bench/run sets it), else bench/out/go-test.
func outDir(t *testing.T) string {
	if d := os.Getenv("ABOX_BENCH_OUT"); d != "" {
		return d
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(wd, "out", "go-test")
}

// addProject writes a manifest with n allowlist entries (srvName first, the rest names that
// are never looked up) and the echo server, and runs `abox up` for it with bin.
func (w *world) addProject(t *testing.T, name, dir string, n int, bin string) *project {
	return w.addProjectWith(t, name, dir, n, bin, "")
}

// addProjectWith is addProject with extra appended to the manifest.
func (w *world) addProjectWith(t *testing.T, name, dir string, n int, bin, extra string) *project {
	t.Helper()
	var m strings.Builder
	fmt.Fprintf(&m, "version: 1\nproject: %s\nprofile: %s\nservers: [echo, %s]\negress:\n  - %q\n", name, w.h.Profile, spawnedServer, srvName)
	for i := 1; i < n; i++ {
		fmt.Fprintf(&m, "  - \"h%03d.bench.test\"\n", i)
	}
	m.WriteString(extra)
	writeFile(t, filepath.Join(dir, "agentbox.yaml"), m.String())
	p := &project{name: name, dir: dir, hash: projectHash(dir), bin: bin}
	mustOK(t, "abox up ("+name+")", w.abox(t, p, "up", "--yes"))
	data, err := os.ReadFile(filepath.Join(w.h.StateHome, "projects", p.hash, "artifacts", "runspec.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &p.spec); err != nil {
		t.Fatal(err)
	}
	return p
}

// secondWorkspace makes another project directory the agent (uid 1000) can write, and removes
// what abox makes for it and the harness does not know: its containers and ~/.claude volume.
func (w *world) secondWorkspace(t *testing.T, name string) string {
	t.Helper()
	ws := filepath.Join(w.h.Dir, name)
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(ws, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	hash := projectHash(ws)
	t.Cleanup(func() {
		if ids := strings.Fields(w.h.Docker("ps", "-aq", "--filter", "label=abox.hash="+hash).Stdout); len(ids) > 0 {
			w.h.Docker(append([]string{"rm", "-f", "-v"}, ids...)...)
		}
		w.h.Docker("volume", "rm", "-f", "abox-claude-"+hash)
	})
	return ws
}

// projectHash is abox's hash of a workspace path, as in container labels and state paths.
func projectHash(dir string) string {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	sum := sha256.Sum256([]byte(dir))
	return hex.EncodeToString(sum[:])[:12]
}

// stateDir is the project's directory in abox's state.
func (w *world) stateDir(p *project) string {
	return filepath.Join(w.h.StateHome, "projects", p.hash)
}

// write stores a figure and logs its summary line.
func (w *world) write(t *testing.T, f *Figure) {
	t.Helper()
	if err := f.Write(w.out); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %s %s | %s %s | ratio %.3f (%.3f–%.3f) diff %.3f %s",
		f.ID, f.A.Label, fmtStat(f.A.Stat), f.B.Label, fmtStat(f.B.Stat),
		f.Ratio.Median, f.Ratio.Min, f.Ratio.Max, f.Diff.Median, f.Unit)
}

func fmtStat(s Stat) string { return fmt.Sprintf("%.4g/%.4g/%.4g", s.Min, s.Median, s.Max) }

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
