//go:build e2e

package harness

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/config"
)

// The real Claude Code, for the real-client group (e2e/realclient_test.go): abox installs it
// itself from the npm registry (claude_code.source: npm), and it talks to a stand-in of the
// Messages API (e2e/messagesapi) instead of Anthropic's.

// RealClaudeVersion is the Claude Code the real-client tests install: $ABOX_E2E_CLAUDE_VERSION,
// else abox's default, config.DefaultClaudeVersion.
func RealClaudeVersion() string {
	if v := os.Getenv("ABOX_E2E_CLAUDE_VERSION"); v != "" {
		return v
	}
	return config.DefaultClaudeVersion
}

var buildMessagesAPI = sync.OnceValues(func() (string, error) { return scratchImage("messagesapi") })

// MessagesAPIImage returns the Messages API stand-in's image, abox-e2e-messagesapi:<hash>.
func MessagesAPIImage(t testing.TB) string { return must(t, buildMessagesAPI) }

// MessagesAPI is a running stand-in of the Anthropic Messages API.
type MessagesAPI struct {
	Container string
	Alias     string // its name on the test network; a manifest must allow it as egress
	URL       string // https://<alias>, for ANTHROPIC_BASE_URL
	log       string // host path of its request log
}

// StartMessagesAPI starts the Messages API stand-in on the test network under alias, serving
// HTTPS with a certificate of the test CA for that name.
func (h *H) StartMessagesAPI(alias string) *MessagesAPI {
	h.T.Helper()
	CA(h.T) // creates the test CA if no server did yet
	dir := filepath.Join(h.Dir, "messagesapi-"+alias)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		h.T.Fatal(err)
	}
	m := &MessagesAPI{Container: h.name("api"), Alias: alias, URL: "https://" + alias, log: filepath.Join(dir, "requests.jsonl")}
	h.start(m.Container, []string{"-v", CADir(h.T) + ":/ca:ro", "-v", dir + ":/log", "--network-alias", alias,
		MessagesAPIImage(h.T), "-names", alias})
	h.waitEvent(m.Container, "ready", 30*time.Second)
	return m
}

// APIRequest is one request the stand-in received, as it logged it.
type APIRequest struct {
	Time    time.Time         `json:"time"`
	Method  string            `json:"method"`
	Path    string            `json:"path"`
	Headers map[string]string `json:"headers"`
	Kind    string            `json:"kind"`   // conversation, side, count_tokens or other
	Answer  string            `json:"answer"` // text, tool_use:<name>, error:<type> …
	Status  int               `json:"status"`
	Body    json.RawMessage   `json:"body"`
	Fetched []string          `json:"fetched"` // the URL sources it fetched, as the API does
}

// ToolNames returns the names of the tools a Messages request offers the model.
func (r APIRequest) ToolNames() []string {
	var body struct{ Tools []struct{ Name string } }
	json.Unmarshal(r.Body, &body)
	var out []string
	for _, t := range body.Tools {
		out = append(out, t.Name)
	}
	return out
}

// Messages returns the messages of a Messages request, each as raw JSON.
func (r APIRequest) Messages() []json.RawMessage {
	var body struct{ Messages []json.RawMessage }
	json.Unmarshal(r.Body, &body)
	return body.Messages
}

// Requests returns every request the stand-in has logged so far.
func (m *MessagesAPI) Requests(t testing.TB) []APIRequest {
	t.Helper()
	data, err := os.ReadFile(m.log)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []APIRequest
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var r APIRequest
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("request log of %s: %v", m.Container, err)
		}
		out = append(out, r)
	}
	return out
}

// Conversation returns the requests of the scripted conversation (those offering Bash whose
// prompt is a script), leaving out side requests such as an older client's subagent warm-ups.
func (m *MessagesAPI) Conversation(t testing.TB) []APIRequest {
	t.Helper()
	var out []APIRequest
	for _, r := range m.Requests(t) {
		if r.Kind == "conversation" {
			out = append(out, r)
		}
	}
	return out
}

// RealClaudeConfig is [H.DefaultConfig] with the real Claude Code from npm instead of the
// stand-in, pointed at api: ANTHROPIC_BASE_URL and a dummy ANTHROPIC_API_KEY in agent_env (over
// abox's defaults, which switch off the auto-updater and non-essential traffic), and
// NODE_EXTRA_CA_CERTS naming the image's CA bundle, which holds the test CA.
func (h *H) RealClaudeConfig(api *MessagesAPI) Config {
	h.T.Helper()
	c := h.DefaultConfig()
	c.ClaudeCode = ClaudeCodeConfig{Source: "npm", Version: RealClaudeVersion()}
	c.Extra["agent_env"] = map[string]string{
		"ANTHROPIC_BASE_URL":  api.URL,
		"ANTHROPIC_API_KEY":   "sk-ant-e2e-dummy-" + strings.ReplaceAll(h.ID, "-", ""),
		"NODE_EXTRA_CA_CERTS": "/etc/ssl/certs/ca-certificates.crt",
	}
	return c
}

// KeepRealClientImage tags the agent image abox built with the real Claude Code as
// abox-e2e-realclient:<version>-<image id>. abox's own tag changes with abox's version, and goes
// with its project; this one keeps the layers (Debian's nodejs and npm and the npm install,
// minutes on a cold machine) in the daemon's build cache for the next run, which reuses them
// whatever abox's version. The id keeps checkouts with another test CA, hence another image,
// from taking the tag from each other. Older tags are pruned as the harness prunes its other
// images.
func (h *H) KeepRealClientImage(image string) {
	h.T.Helper()
	id := strings.TrimPrefix(ImageID(h.T, image), "sha256:")
	tag := "abox-e2e-realclient:" + RealClaudeVersion() + "-" + id[:min(12, len(id))]
	h.MustDocker("tag", image, tag)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pruneImages(ctx, "abox-e2e-realclient", tag)
}
