//go:build e2e

package harness

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aboxhq/abox/e2e/testca"
)

// H is one test's isolated world. Its fields are fixed by [Setup]; its methods fail the test on
// any error of the harness itself (not of the command under test, which is in a [Result]).
type H struct {
	T  testing.TB
	ID string // unique per test and run: names and labels derive from it

	Network string // the test's docker network, created by Setup
	Profile string // a gateway profile name unique to the test

	Dir        string // the test's temporary root
	Home       string // HOME for abox
	ConfigHome string // ABOX_CONFIG_HOME
	StateHome  string // ABOX_STATE_HOME
	Workspace  string // the project directory abox runs in

	// AboxTimeout bounds each [H.Abox] call (default 10 minutes).
	AboxTimeout time.Duration

	mu      sync.Mutex
	started []string // containers to dump on failure
	serial  int
}

var testCounter atomic.Int64

// Setup prepares an isolated world for t and registers its clean-up.
func Setup(t testing.TB) *H {
	t.Helper()
	id := fmt.Sprintf("%s-%d", runID, testCounter.Add(1))
	dir := t.TempDir()
	h := &H{
		T: t, ID: id,
		Network: "abox-e2e-" + id,
		Profile: "e2e" + strings.ReplaceAll(id, "-", ""),
		Dir:     dir, Home: filepath.Join(dir, "home"),
		ConfigHome: filepath.Join(dir, "config"), StateHome: filepath.Join(dir, "state"),
		Workspace:   filepath.Join(dir, "work"),
		AboxTimeout: 10 * time.Minute,
	}
	for _, d := range []string{h.Home, h.ConfigHome, h.StateHome, h.Workspace} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// The agent runs as uid 1000 and must be able to write the workspace, as it can a user's
	// own project directory.
	if err := os.Chown(h.Workspace, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.cleanup)
	h.MustDocker(append([]string{"network", "create"}, append(h.labelArgs(), h.Network)...)...)
	return h
}

var unsafeLabel = regexp.MustCompile(`[^A-Za-z0-9_.\-/]`)

// Labels returns the labels every resource of this test carries.
func (h *H) Labels() map[string]string {
	return map[string]string{
		LabelTest: h.ID,
		LabelPID:  fmt.Sprint(os.Getpid()),
		LabelName: unsafeLabel.ReplaceAllString(h.T.Name(), "_"),
	}
}

// labelArgs returns the labels as docker --label flags.
func (h *H) labelArgs() []string {
	var args []string
	for _, k := range []string{LabelTest, LabelPID, LabelName} {
		args = append(args, "--label", k+"="+h.Labels()[k])
	}
	return args
}

// Docker runs the docker CLI; a failure to run it at all fails the test.
func (h *H) Docker(args ...string) Result {
	h.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	res, err := docker(ctx, args...)
	if err != nil {
		h.T.Fatal(err)
	}
	return res
}

// MustDocker runs the docker CLI and returns its trimmed stdout; a non-zero exit fails the test.
func (h *H) MustDocker(args ...string) string {
	h.T.Helper()
	res := h.Docker(args...)
	if !res.OK() {
		h.T.Fatalf("docker %s: %s", strings.Join(args, " "), res)
	}
	return strings.TrimSpace(res.Stdout)
}

// Env is abox's environment: this process's, with the test's own HOME, config and state
// directories, no colour and the legacy builder.
func (h *H) Env() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "ABOX_") || strings.HasPrefix(k, "XDG_") || k == "HOME" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+h.Home, "ABOX_CONFIG_HOME="+h.ConfigHome, "ABOX_STATE_HOME="+h.StateHome,
		"NO_COLOR=1", "DOCKER_BUILDKIT=0")
}

// Abox runs the abox binary in the workspace; a test fails, never skips, when it cannot be built.
func (h *H) Abox(args ...string) Result {
	h.T.Helper()
	return h.AboxIn(h.Workspace, args...)
}

// AboxIn runs the abox binary in dir.
func (h *H) AboxIn(dir string, args ...string) Result {
	h.T.Helper()
	bin := AboxBinary(h.T)
	ctx, cancel := context.WithTimeout(context.Background(), h.AboxTimeout)
	defer cancel()
	start := time.Now()
	res, err := command{name: bin, args: args, env: h.Env(), dir: dir}.run(ctx)
	if err != nil {
		h.T.Fatalf("abox %s: %v\n%s", strings.Join(args, " "), err, res)
	}
	h.T.Logf("abox %s: exit %d in %.1fs", strings.Join(args, " "), res.ExitCode, time.Since(start).Seconds())
	h.WaitAfterRun()
	return res
}

// WaitAfterRun waits until no project of the test has a finished netd left to remove: a run
// returns once it has harvested its netd, and leaves the removal of the container to the
// after-run process it starts in the background. Tests that look at the containers after a
// run see them as the user does a moment later; the retire itself has tests of its own.
func (h *H) WaitAfterRun() {
	h.T.Helper()
	deadline := time.Now().Add(afterRunWait)
	for {
		left, _ := filepath.Glob(filepath.Join(h.StateHome, "projects", "*", "retired-netd"))
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			h.T.Fatalf("finished netds still listed for removal %s after a run: %v", afterRunWait, left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// afterRunWait bounds [H.WaitAfterRun]: the after-run process removes a netd in well under a
// second; it may wait for a spare's start-up before.
const afterRunWait = 30 * time.Second

// DefaultConfig is a config.yaml for this test: its network, the offline base image, the test
// and host CAs, the stand-in claude from a file, the mcpstub gateway and the test's profile.
//
// The agent gets a dummy CLAUDE_CODE_OAUTH_TOKEN through agent_env: abox refuses a headless run
// whose agent has neither a credential in its environment nor a login in the project's volume,
// and the stand-in needs none. A test of the logged-out path sets agent_env itself.
func (h *H) DefaultConfig() Config {
	h.T.Helper()
	CA(h.T) // creates the test CA the config points at, if no server did yet
	standin := StandinBinary(h.T)
	data, err := os.ReadFile(standin)
	if err != nil {
		h.T.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return Config{
		Network: h.Network,
		Image: ImageConfig{
			Base:           BaseImageID(h.T),
			CACertificates: append([]string{filepath.Join(CADir(h.T), testca.CertFile)}, HostCACertificates()...),
		},
		ClaudeCode: ClaudeCodeConfig{Source: "file", Path: standin, SHA256: hex.EncodeToString(sum[:]), Version: standinVersion},
		Gateway:    GatewayConfig{Image: ImageID(h.T, MCPStubImage(h.T))},
		Profiles:   map[string]Profile{h.Profile: {Port: 8811}},
		Extra:      h.defaultExtra(),
	}
}

// defaultExtra is DefaultConfig's agent_env, defaults.spare_netd off and, for a run of the
// suite under another runtime ([AgentRuntime]), defaults.runtime.
//
// Spare netds are abox's default, but a test's project does not leave one behind unless it asks
// for it ([H.SpareNetd]): a spare per test would start a netd in the background after every run
// of the suite, on a machine the serial tests time and load, and add a container to every test
// that counts them. The spare's own tests, and the benchmarks, turn it on.
func (h *H) defaultExtra() map[string]any {
	extra := map[string]any{"agent_env": map[string]string{"CLAUDE_CODE_OAUTH_TOKEN": "e2e-stand-in"}}
	defaults := map[string]any{"spare_netd": false}
	rt, err := AgentRuntime()
	if err != nil {
		h.T.Fatal(err)
	}
	if rt != "runc" {
		defaults["runtime"] = rt
	}
	extra["defaults"] = defaults
	return extra
}

// SpareNetd returns c with defaults.spare_netd set to on, as abox's own default has it.
func SpareNetd(c Config) Config {
	defaults := map[string]any{}
	if d, ok := c.Extra["defaults"].(map[string]any); ok {
		for k, v := range d {
			defaults[k] = v
		}
	}
	defaults["spare_netd"] = true
	c.Extra["defaults"] = defaults
	return c
}

// AgentRuntime is the runtime the projects of [H.DefaultConfig] run their agent under:
// $ABOX_E2E_RUNTIME, runc or runsc, else runc. With runsc (registered by setup.sh with
// --network=host) the attack tests show the sandbox holding with the agent under gVisor.
func AgentRuntime() (string, error) {
	switch rt := os.Getenv("ABOX_E2E_RUNTIME"); rt {
	case "", "runc":
		return "runc", nil
	case "runsc":
		return rt, nil
	default:
		return "", fmt.Errorf("ABOX_E2E_RUNTIME=%q: want runc or runsc", rt)
	}
}

// standinVersion is the version the stand-in claude reports.
const standinVersion = "2.1.0"

// WriteConfig writes c as the test's config.yaml and returns its path.
func (h *H) WriteConfig(c Config) string {
	h.T.Helper()
	p, err := writeConfig(h.ConfigHome, c)
	if err != nil {
		h.T.Fatal(err)
	}
	return p
}

// WriteFile writes data to a path relative to the workspace, creating directories, and returns
// the absolute path.
func (h *H) WriteFile(rel, data string) string {
	h.T.Helper()
	p := filepath.Join(h.Workspace, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		h.T.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		h.T.Fatal(err)
	}
	return p
}

// WriteManifest writes the workspace's agentbox.yaml.
func (h *H) WriteManifest(yaml string) string {
	h.T.Helper()
	return h.WriteFile("agentbox.yaml", yaml)
}

// ProjectHash is abox's hash of the workspace path (first 12 hex digits of its sha256), which
// abox puts in the names and labels of the project's containers and volumes.
func (h *H) ProjectHash() string {
	ws := h.Workspace
	if real, err := filepath.EvalSymlinks(ws); err == nil {
		ws = real
	}
	sum := sha256.Sum256([]byte(ws))
	return hex.EncodeToString(sum[:])[:12]
}

// name returns a new container name for this test: abox-e2e-<id>-<role><n>.
func (h *H) name(role string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.serial++
	return fmt.Sprintf("abox-e2e-%s-%s%d", h.ID, role, h.serial)
}
