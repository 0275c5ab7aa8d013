//go:build e2e

package e2e

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aboxhq/abox/e2e/harness"
)

// upProject writes the test's config and a manifest allowing egress, runs `abox up`, and
// returns h for chaining. extra is appended to the manifest.
func upProject(t *testing.T, h *harness.H, project string, egress []string, extra string) {
	t.Helper()
	h.WriteConfig(h.DefaultConfig())
	var m strings.Builder
	m.WriteString("version: 1\nproject: " + project + "\nprofile: " + h.Profile + "\n")
	if len(egress) > 0 {
		m.WriteString("egress:\n")
		for _, e := range egress {
			m.WriteString("  - \"" + e + "\"\n")
		}
	}
	m.WriteString(extra)
	h.WriteManifest(m.String())
	if res := h.Abox("up", "--yes"); !res.OK() {
		t.Fatalf("abox up: %s", res)
	}
}

// agentOutput returns the assistant text of a stream-json transcript (abox run's stdout when it
// is not a terminal).
func agentOutput(stdout string) string {
	var out strings.Builder
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var ev struct {
			Type    string `json:"type"`
			Message *struct {
				Content []struct {
					Type string `json:"type"`
					Text string `json:"text"`
				} `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Type != "assistant" || ev.Message == nil {
			continue
		}
		for _, c := range ev.Message.Content {
			if c.Type == "text" {
				out.WriteString(c.Text)
			}
		}
	}
	return out.String()
}

// probe is one adversary probe's JSON result line, printed by the stand-in's `claude net`.
type probeResult struct {
	OK      bool     `json:"ok"`
	Error   string   `json:"error"`
	Reply   string   `json:"reply"`
	RCode   string   `json:"rcode"`
	Answers []string `json:"answers"`
	// Namespace attacks (e2e/standin/ns.go).
	Bound          []string `json:"bound"`
	BindRefused    []string `json:"bind_refused"`
	Sent           int64    `json:"sent"`
	SendErrors     int64    `json:"send_errors"`
	FirstSendError string   `json:"first_send_error"`
	Queries        []string `json:"queries"`
	Conns          int      `json:"conns"`
	Authorization  bool     `json:"authorization"`
	Rounds         int      `json:"rounds"`
	BrokeAfter     float64  `json:"broke_after_s"`
	// Connection floods (e2e/standin/net_flood.go).
	Tried   int `json:"tried"`
	Held    int `json:"held"`
	Refused int `json:"refused"`
}

// probes parses the lines of the agent's output that start with "name " followed by a probe's
// JSON, as the test prompts print them.
func probes(t *testing.T, output string) map[string]probeResult {
	t.Helper()
	out := map[string]probeResult{}
	for _, l := range strings.Split(output, "\n") {
		name, js, ok := strings.Cut(l, " {")
		if !ok {
			continue
		}
		var p probeResult
		if err := json.Unmarshal([]byte("{"+js), &p); err != nil {
			continue
		}
		out[name] = p
	}
	return out
}

// runRecords reads the project's runs.jsonl.
func runRecords(t *testing.T, h *harness.H) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(h.StateHome, "projects", h.ProjectHash(), "runs.jsonl"))
	if err != nil {
		t.Fatalf("reading runs.jsonl: %v", err)
	}
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r map[string]any
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("runs.jsonl line %q: %v", l, err)
		}
		out = append(out, r)
	}
	return out
}

// projectContainers lists every container of the workspace's project, running or not.
func projectContainers(h *harness.H) []string {
	res := h.Docker("ps", "-a", "--filter", "label=abox.hash="+h.ProjectHash(), "--format", "{{.Names}}")
	return strings.Fields(res.Stdout)
}
