//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aboxhq/abox/e2e/harness"
	"github.com/aboxhq/abox/internal/gateway"
)

// Secrets end to end on the real daemon, with the mcpstub gateway: its built-in "secrets"
// server is a custom server here whose catalog entry declares the secret e2e.api_token as
// E2E_API_TOKEN, and its secret_env tool returns that variable as the server would see it.
//
// The value is random per run and never appears whole in a prompt: the agent's scripts get it
// as two halves they join only inside grep's pattern file (a pipe), so the prompt in the
// agent's argv, the run's argv.json and the transcript cannot themselves hold it, and any hit
// of the whole value is a real leak.

const secretName = "e2e.api_token"

func TestSecretsReachServersNotTheAgent(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	h.WriteConfig(h.DefaultConfig())
	stub := harness.ImageID(t, harness.MCPStubImage(t))
	writeFile(t, filepath.Join(h.ConfigHome, "custom-servers.yaml"), "secrets:\n  image: "+stub+
		"\n  pin: false\n  tools: [secret_env]\n  secrets: [{name: "+secretName+", env: E2E_API_TOKEN}]\n")
	h.WriteManifest("version: 1\nproject: sec\nprofile: " + h.Profile + "\nservers: [secrets]\n")
	value := randomValue(t)

	// Before the secret is stored, the gateway is refused rather than started with <UNKNOWN>.
	res := h.Abox("up", "--yes")
	if res.OK() || !strings.Contains(res.Stderr, "needs secrets the store does not hold") ||
		!strings.Contains(res.Stderr, "abox secrets set "+secretName) {
		t.Fatalf("abox up without the secret: %s", res)
	}
	secretsSetStdin(t, h, secretName, value)
	mustAbox(t, h, "up", "--yes")
	gw := gateway.Name(h.Profile)

	// The gateway's server sees the value; the agent receives only a count from its script.
	out := secretsRun(t, h, value, false, `echo "server $(claude mcp-call call secret_env '{"name":"E2E_API_TOKEN"}' | grep -cF -f <(secret))"`)
	if out["server"] != "1" {
		t.Errorf("secret_env through netd: %q matches of the value, want 1", out["server"])
	}

	// Nothing of it in the agent: environment, processes, mounts, readable files; none in the
	// inspect documents of the gateway or the sandbox; none in abox's state outside the store.
	out = secretsRun(t, h, value, true, secretsLeakScript...)
	for _, k := range []string{"env", "proc-environ", "proc-cmdline", "mountinfo"} {
		if out[k] != "0" {
			t.Errorf("the agent found the value in %s: %q", k, out[k])
		}
	}
	if out["files"] != "none" {
		t.Errorf("files the agent can read hold the value: %s", out["files"])
	}
	if out["mounts"] != "0" {
		t.Errorf("the agent sees abox's secrets files in its mounts: %q", out["mounts"])
	}
	checkInspectClean(t, h, value, gw)
	kept := secretsKept(t, h)
	checkInspectClean(t, h, value, kept...)
	h.Docker(append([]string{"rm", "-f"}, kept...)...)
	checkGatewaySecretsMount(t, h, gw)
	checkStateClean(t, h, value)

	// A new value recreates the gateway, which then hands the server the new one.
	value2 := randomValue(t)
	secretsSetStdin(t, h, secretName, value2)
	if res := mustAbox(t, h, "gateway", "up"); !strings.Contains(res.Stdout, "recreated (changed secrets)") {
		t.Errorf("gateway up after a new value: %s", res)
	}
	out = secretsRun(t, h, value2, false, `echo "server $(claude mcp-call call secret_env '{"name":"E2E_API_TOKEN"}' | grep -cF -f <(secret))"`)
	if out["server"] != "1" {
		t.Errorf("secret_env after rotation: %q matches of the new value, want 1", out["server"])
	}

	// Attached, the agent holds it (and docker inspect of the agent shows it, as the spec
	// accepts); run and doctor say so. Detached, the next run is without it.
	mustAbox(t, h, "secrets", "attach", "API_KEY="+secretName)
	mustAbox(t, h, "up", "--yes")
	res = h.Abox("run", "--keep", secretsScript(value2, append([]string{`[ "$API_KEY" = "$(secret)" ] && echo "attached yes"`}, secretsLeakScript...)...))
	if !res.OK() || secretsOutput(res.Stdout)["attached"] != "yes" {
		t.Fatalf("run with API_KEY attached: %s", res)
	}
	// The same probes now find it: they are not blind.
	if out := secretsOutput(res.Stdout); out["env"] != "1" || out["proc-environ"] == "0" {
		t.Errorf("with API_KEY attached the leak probes found env %q, proc-environ %q; want hits", out["env"], out["proc-environ"])
	}
	if !strings.Contains(res.Stderr, "warning: the agent holds secrets in its environment: 1 secret: API_KEY←"+secretName) ||
		!strings.Contains(res.Stderr, "allowed domains") {
		t.Errorf("the run did not warn about the attached secret:\n%s", res.Stderr)
	}
	kept = secretsKept(t, h)
	checkAttachedInspect(t, h, value2, kept)
	checkStateClean(t, h, value2)
	doc := h.Abox("doctor")
	if !strings.Contains(doc.Stdout, "! secrets in the agent's environment: the agent holds secrets in its environment: 1 secret: API_KEY←"+secretName) ||
		!strings.Contains(doc.Stdout, "allowed domains") || strings.Contains(doc.Stdout, value2) {
		t.Errorf("doctor with an attached secret:\n%s", doc.Stdout)
	}
	if !strings.Contains(doc.Stdout, "secrets store: abox: plaintext files") {
		t.Errorf("doctor does not state the store's claim:\n%s", doc.Stdout)
	}

	mustAbox(t, h, "secrets", "detach", "API_KEY")
	out = secretsRun(t, h, value2, false, `[ -z "${API_KEY+set}" ] && echo "detached yes"`)
	if out["detached"] != "yes" {
		t.Errorf("after detach the agent still has API_KEY: %v", out)
	}
}

// secretsLeakScript looks for the value everywhere the agent can look, printing counts only.
var secretsLeakScript = []string{
	`echo "env $(env | grep -cF -f <(secret))"`,
	`echo "proc-environ $(cat /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n' | grep -cF -f <(secret))"`,
	`echo "proc-cmdline $(cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\0' '\n' | grep -cF -f <(secret))"`,
	`echo "mountinfo $(cat /proc/self/mountinfo | grep -cF -f <(secret))"`,
	`echo "mounts $(grep -cE 'secrets\.env|/secrets/|/gateways/' /proc/self/mountinfo)"`,
	`hits=$(grep -rlF -f <(secret) / --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev 2>/dev/null | head -5 | tr '\n' ' ')`,
	`echo "files ${hits:-none}"`,
}

// secretsScript prefixes the agent's script with secret(), which prints the value joined from
// its two halves: the whole value is never in the prompt.
func secretsScript(value string, lines ...string) string {
	half := len(value) / 2
	return strings.Join(append([]string{
		`A='` + value[:half] + `'; B='` + value[half:] + `'`,
		`secret() { printf '%s%s\n' "$A" "$B"; }`,
	}, lines...), "\n")
}

// secretsRun runs a script as the agent and returns its "key value" output lines.
func secretsRun(t *testing.T, h *harness.H, value string, keep bool, lines ...string) map[string]string {
	t.Helper()
	args := []string{"run"}
	if keep {
		args = append(args, "--keep")
	}
	res := h.Abox(append(args, secretsScript(value, lines...))...)
	if !res.OK() {
		t.Fatalf("abox run: %s", res)
	}
	return secretsOutput(res.Stdout)
}

func secretsOutput(stdout string) map[string]string {
	out := map[string]string{}
	for _, l := range strings.Split(agentOutput(stdout), "\n") {
		if k, v, ok := strings.Cut(l, " "); ok {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}

// secretsSetStdin runs `abox secrets set NAME --stdin` with the value piped in.
func secretsSetStdin(t *testing.T, h *harness.H, name, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, harness.AboxBinary(t), "secrets", "set", name, "--stdin")
	cmd.Env, cmd.Dir, cmd.Stdin = h.Env(), h.Workspace, strings.NewReader(value+"\n")
	out, err := cmd.CombinedOutput()
	if err != nil || bytes.Contains(out, []byte(value)) {
		t.Fatalf("abox secrets set %s --stdin: %v\n%s", name, err, out)
	}
}

// secretsKept returns the project's containers kept by `run --keep`, and removes them when the
// test ends if the test has not.
func secretsKept(t *testing.T, h *harness.H) []string {
	t.Helper()
	names := projectContainers(h)
	if len(names) != 2 {
		t.Fatalf("kept containers = %v, want netd and the agent", names)
	}
	t.Cleanup(func() { h.Docker(append([]string{"rm", "-f"}, names...)...) })
	return names
}

// checkInspectClean: the full inspect document of each container holds no trace of value.
func checkInspectClean(t *testing.T, h *harness.H, value string, names ...string) {
	t.Helper()
	for _, n := range names {
		if doc := h.MustDocker("container", "inspect", n); strings.Contains(doc, value) {
			t.Errorf("docker inspect %s holds the secret value", n)
		}
	}
}

// checkAttachedInspect: the attached value is in the agent's configured environment (the
// accepted, documented exposure) and nowhere in netd's.
func checkAttachedInspect(t *testing.T, h *harness.H, value string, names []string) {
	t.Helper()
	for _, n := range names {
		role := h.MustDocker("container", "inspect", "--format", `{{index .Config.Labels "abox.role"}}`, n)
		doc := h.MustDocker("container", "inspect", n)
		switch {
		case role == "agent" && !strings.Contains(doc, "API_KEY="+value):
			t.Errorf("docker inspect of the agent %s lacks API_KEY: the attach did not reach the container", n)
		case role == "agent" && strings.Contains(h.MustDocker("container", "inspect", "--format", "{{json .Args}}", n), value):
			t.Errorf("the agent's argv holds the attached value")
		case role != "agent" && strings.Contains(doc, value):
			t.Errorf("docker inspect of %s (%s) holds the attached value", n, role)
		}
	}
}

// checkGatewaySecretsMount: the gateway reads its secrets from a read-only bind mount named by
// --secrets, not from its environment.
func checkGatewaySecretsMount(t *testing.T, h *harness.H, gw string) {
	t.Helper()
	c := inspectGateway(t, h, gw)
	target := gateway.SecretsPath(h.Profile)
	mounted := false
	for _, m := range c.HostConfig.Mounts {
		mounted = mounted || (m.Target == target && m.ReadOnly)
	}
	if v, _ := gateway.ArgValue(c.Args, "--secrets"); !mounted || v != target {
		t.Errorf("gateway mounts %+v with --secrets=%q; want %s read-only", c.HostConfig.Mounts, v, target)
	}
	st, err := os.Stat(filepath.Join(h.StateHome, "gateways", h.Profile, gateway.SecretsFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the gateway's secrets file: %v, mode %v; want 0600", err, st)
	}
}

// checkStateClean: no file abox wrote or the run left — state (minus the store and the
// gateways' secrets files, which are part of it), configuration, home, workspace — holds value.
func checkStateClean(t *testing.T, h *harness.H, value string) {
	t.Helper()
	store := filepath.Join(h.StateHome, "secrets")
	if data, err := os.ReadFile(filepath.Join(store, secretName)); err != nil || string(data) != value {
		t.Errorf("the store does not hold the value: %v", err)
	}
	scanned := 0
	defer func() {
		if scanned < 10 {
			t.Errorf("only %d files scanned under the state, config, home and workspace", scanned)
		}
	}()
	for _, root := range []string{h.StateHome, h.ConfigHome, h.Home, h.Workspace} {
		filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return nil
			case d.IsDir() && path == store:
				return filepath.SkipDir
			case d.IsDir() || !d.Type().IsRegular() || filepath.Base(path) == gateway.SecretsFile:
				return nil
			}
			scanned++
			if data, err := os.ReadFile(path); err == nil && bytes.Contains(data, []byte(value)) {
				t.Errorf("%s holds the secret value", path)
			}
			return nil
		})
	}
}

func randomValue(t *testing.T) string {
	t.Helper()
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "fake-e2e-secret-" + hex.EncodeToString(b)
}
