package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/docker/dockertest"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/sandbox"
	"github.com/aboxhq/abox/internal/telemetry"
	"github.com/aboxhq/abox/internal/watch"
)

// hostilePayloads are what an agent prints, looks up, names a file or provokes a tool to be
// called, to drive the terminal of whoever reads abox's output. line is the visible form in a
// one-line field, text in free text that keeps its line breaks.
var hostilePayloads = []struct{ name, payload, line, text string }{
	{"erase and forge", "\r\x1b[2A\x1b[J(none)", `\r\x1b[2A\x1b[J(none)`, `\r\x1b[2A\x1b[J(none)`},
	{"osc title", "\x1b]0;title\x07", `\x1b]0;title\a`, `\x1b]0;title\a`},
	{"bel", "ding\a", `ding\a`, `ding\a`},
	{"c1 csi", "x\u009b2Jy", `x\u009b2Jy`, `x\u009b2Jy`},
	{"rtl override", "txt\u202eexe.md", `txt\u202eexe.md`, `txt\u202eexe.md`},
	{"invalid utf-8", "bad\xff\xfename", `bad\xff\xfename`, `bad\xff\xfename`},
	{"forged line", "x\n  denied DNS names: (none)", `x\n  denied DNS names: (none)`, "x\n  denied DNS names: (none)"},
}

// hostileProject is a project whose recorded run, harvested netd logs, review queue and
// workspace all carry one payload, as a hostile agent would leave them.
type hostileProject struct {
	app      *App
	out, err *bytes.Buffer
	ws       string
	state    paths.Project
	payload  string
}

// TestHostileTextIsMadeVisible: every printer of agent-influenced text — the run summary, the
// pretty transcript, logs --runs/--dns/--gateway (with the gateway's own log), egress list,
// doctor, an error, a warning — shows each payload only in its visible form, with no raw
// control character in the output; every --json output is valid and decodes back to the
// payload exactly.
func TestHostileTextIsMadeVisible(t *testing.T) {
	for _, hp := range hostilePayloads {
		t.Run(hp.name, func(t *testing.T) {
			h := newHostileProject(t, hp.payload)
			for _, pr := range hostilePrinters {
				t.Run(pr.name, func(t *testing.T) {
					got := pr.print(t, h)
					if bad := rawControl(got); bad != "" {
						t.Errorf("output holds the raw %q:\n%s", bad, got)
					}
					want := []string{hp.line}
					if pr.text {
						want = strings.Split(hp.text, "\n") // its lines may be indented
					}
					for _, w := range want {
						// names stored as JSON hold U+FFFD for a byte that is not UTF-8
						if !strings.Contains(got, w) && !strings.Contains(got, jsonCarried(hp.payload)) {
							t.Errorf("output lacks the visible form %s:\n%s", w, got)
						}
					}
					for _, l := range strings.Split(got, "\n") {
						if strings.HasPrefix(strings.TrimSpace(l), "denied DNS names: (none)") && !pr.text {
							t.Errorf("a payload forged the line %q:\n%s", l, got)
						}
					}
				})
			}
			for _, jp := range hostileJSON {
				t.Run(jp.name, func(t *testing.T) {
					data := h.run(t, jp.args...)
					if bad := rawControl(data); bad != "" {
						t.Errorf("--json holds the raw %q:\n%s", bad, data)
					}
					got := jp.decode(t, []byte(data))
					if want := jsonCarried(hp.payload); !slices.Contains(got, want) {
						t.Errorf("--json decodes to %q, want one of them to be %q:\n%s", got, want, data)
					}
				})
			}
		})
	}
}

var hostilePrinters = []struct {
	name  string
	text  bool // free text, whose line breaks stay
	print func(t *testing.T, h *hostileProject) string
}{
	{"run summary", false, func(t *testing.T, h *hostileProject) string {
		h.err.Reset()
		h.app.printSummary(h.outcome(t), false, "fail")
		return h.err.String()
	}},
	{"logs --transcript", true, func(t *testing.T, h *hostileProject) string {
		return h.run(t, "logs", "--transcript", "r1")
	}},
	{"logs --runs", false, func(t *testing.T, h *hostileProject) string { return h.run(t, "logs", "--runs") }},
	{"logs --dns", false, func(t *testing.T, h *hostileProject) string { return h.run(t, "logs", "--dns") }},
	{"logs --gateway", false, func(t *testing.T, h *hostileProject) string {
		out, _, _ := strings.Cut(h.run(t, "logs", "--gateway"), "the last lines of")
		return out
	}},
	{"gateway log", true, func(t *testing.T, h *hostileProject) string {
		_, log, found := strings.Cut(h.run(t, "logs", "--gateway"), "the last lines of")
		if !found {
			t.Fatal("logs --gateway shows no gateway log")
		}
		return log
	}},
	{"egress list", false, func(t *testing.T, h *hostileProject) string { return h.run(t, "egress", "list") }},
	{"doctor", false, func(t *testing.T, h *hostileProject) string { return h.run(t, "doctor") }},
	// an error message is free text: abox's own may span lines (a hint never does)
	{"error", true, func(t *testing.T, h *hostileProject) string {
		var b bytes.Buffer
		report(&b, withHint(fmt.Errorf("masking %s: permission denied", filepath.Join(h.ws, h.payload)), "check "+h.payload))
		return b.String()
	}},
	{"warning", true, func(t *testing.T, h *hostileProject) string {
		h.err.Reset()
		h.app.warnf("remove "+h.payload, "corrupt line in %s", h.payload)
		return h.err.String()
	}},
}

var hostileJSON = []struct {
	name   string
	args   []string
	decode func(t *testing.T, data []byte) []string
}{
	{"logs --runs --json", []string{"logs", "--runs", "--json"}, func(t *testing.T, data []byte) []string {
		var runs []telemetry.RunRecord
		decodeJSON(t, data, &runs)
		var out []string
		for _, r := range runs {
			out = append(out, r.SessionID)
			for _, c := range r.ExecChanges {
				out = append(out, c.Name, strings.TrimPrefix(c.New, "symlink:"), strings.TrimPrefix(c.Name, "hook:"))
			}
			for _, n := range r.Notes {
				out = append(out, strings.TrimPrefix(n, "agent stderr: "))
			}
		}
		return out
	}},
	{"logs --dns --json", []string{"logs", "--dns", "--json"}, func(t *testing.T, data []byte) []string {
		var lines []telemetry.DNSLine
		decodeJSON(t, data, &lines)
		var out []string
		for _, l := range lines {
			out = append(out, l.Name)
		}
		return out
	}},
	{"logs --gateway --json", []string{"logs", "--gateway", "--json"}, func(t *testing.T, data []byte) []string {
		var lines []telemetry.MCPLine
		decodeJSON(t, data, &lines)
		var out []string
		for _, l := range lines {
			out = append(out, l.Tool)
		}
		return out
	}},
	{"egress list --json", []string{"egress", "list", "--json"}, func(t *testing.T, data []byte) []string {
		var rep telemetry.Review
		decodeJSON(t, data, &rep)
		var out []string
		for _, q := range rep.Queue {
			out = append(out, q.Name)
		}
		return out
	}},
	{"logs --transcript --json", []string{"logs", "--transcript", "r1", "--json"}, func(t *testing.T, data []byte) []string {
		var out []string
		for _, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
			var v any
			decodeJSON(t, line, &v)
			if s, ok := v.(string); ok {
				out = append(out, s) // a line of the agent's that was not JSON
				continue
			}
			var ev telemetry.Event
			decodeJSON(t, line, &ev)
			if ev.Message != nil {
				for _, c := range ev.Message.Content {
					out = append(out, c.Text, c.Name)
				}
			}
		}
		return out
	}},
	{"doctor --json", []string{"doctor", "--json"}, func(t *testing.T, data []byte) []string {
		var rep struct {
			Checks []struct {
				ID   string
				Data struct {
					Items   []string       `json:"items"`
					Changes []watch.Change `json:"changes"`
				}
			}
		}
		decodeJSON(t, data, &rep)
		var out []string
		for _, c := range rep.Checks {
			for _, it := range c.Data.Items {
				out = append(out, strings.TrimSuffix(it, " (x2)"))
			}
			for _, ch := range c.Data.Changes {
				out = append(out, strings.TrimSuffix(strings.TrimPrefix(ch.Name, ".claude/"), ".md"))
			}
		}
		return out
	}},
}

func newHostileProject(t *testing.T, payload string) *hostileProject {
	t.Helper()
	root := t.TempDir()
	env := map[string]string{
		"HOME": filepath.Join(root, "home"), "ABOX_CONFIG_HOME": filepath.Join(root, "config"),
		"ABOX_STATE_HOME": filepath.Join(root, "state"), "ABOX_DOCKER_MCP_HOME": filepath.Join(root, "mcp"),
	}
	h := &hostileProject{out: &bytes.Buffer{}, err: &bytes.Buffer{}, ws: filepath.Join(root, "proj"), payload: payload}
	exe, _ := os.Executable()
	h.app = &App{
		In: strings.NewReader(""), Out: h.out, Err: h.err, Version: "0.0.0-test", Executable: exe,
		Env: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		Now: func() time.Time { return time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC) },
	}
	f := dockertest.New(t)
	// the profile's gateway runs, and its own log carries the payload too
	f.On("container inspect --format {{json .}} abox-gw-default", docker.Result{Stdout: []byte(
		`{"Id":"c1","State":{"Status":"running","Running":true},"Config":{"Image":"x","Labels":{"abox.managed":"true","abox.role":"gateway"}}}`)}).Optional()
	f.On("logs --tail", docker.Result{Stdout: []byte("calling tool " + payload + "\n")}).Optional()
	f.On("version", docker.Result{Stdout: []byte(`{"Client":{"Version":"28.2.2","ApiVersion":"1.41"},"Server":{"Version":"20.10.24","ApiVersion":"1.41"}}`)}).Optional()
	f.On("ps", docker.Result{}).Optional()
	f.On("", docker.Result{ExitCode: 1, Stderr: []byte("Error: No such object: x\n")}).Optional()
	h.app.dockerClient = docker.NewClient(f, nil)
	if err := os.MkdirAll(filepath.Join(h.ws, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	agentOwned(t, h.ws)
	h.run(t, "init", "--yes", "-C", h.ws, "--project", "p")
	ps, _ := h.app.Paths()
	h.state = ps.Project(realPath(t, h.ws))
	h.run(t, "doctor", "--accept-git", "--accept-watch") // records the workspace baseline, as abox up does
	h.plant(t)
	return h
}

// plant leaves the payload wherever a hostile agent puts it: its stdout (the transcript), the
// names netd logged, the review queue, the run's notes, a workspace file name.
func (h *hostileProject) plant(t *testing.T) {
	t.Helper()
	p := h.payload
	run := filepath.Join(h.state.Runs(), "r1")
	stream := []any{
		map[string]any{"type": "system", "subtype": "init", "session_id": p},
		map[string]any{"type": "assistant", "message": map[string]any{"content": []any{
			map[string]any{"type": "text", "text": p}, map[string]any{"type": "tool_use", "name": p}}}},
		map[string]any{"type": "result", "subtype": p, "result": p},
	}
	var transcript []byte
	for _, ev := range stream {
		transcript = jsonLine(t, transcript, ev)
	}
	transcript = append(transcript, p+"\n"...) // a line that is not JSON
	writeFile(t, filepath.Join(run, "transcript.jsonl"), transcript)
	writeFile(t, filepath.Join(run, "netd", policy.DNSLog), jsonLine(t, nil,
		policy.DNSRecord{TS: "2026-11-29T10:00:00.000Z", Name: p, Type: "A", Verdict: policy.Denied, RCode: "NXDOMAIN"}))
	writeFile(t, filepath.Join(run, "netd", policy.ConnLog), jsonLine(t, nil,
		policy.ConnRecord{TS: "2026-11-29T10:00:01.000Z", Kind: "tls", Name: p, Port: 443, Verdict: policy.Denied, Reason: "not allowed: " + p}))
	writeFile(t, filepath.Join(run, "netd", policy.MCPLog), jsonLine(t, nil,
		policy.MCPRecord{TS: "2026-11-29T10:00:02.000Z", Method: "tools/call", Tool: p, Verdict: policy.Denied, Reason: "tool " + p + " is not allowed"}))
	rec := telemetry.RunRecord{ID: "r1", TS: "2026-11-29T10:00:00Z", Project: "p", Kind: "run", SessionID: p,
		Transcript: filepath.Join(run, "transcript.jsonl"), RunDir: run, Outcome: "exited", Notes: []string{"agent stderr: " + p},
		ExecChanges: hostileExec(p)}
	writeFile(t, h.state.RunsIndex(), jsonLine(t, nil, rec))
	var denied []byte
	for _, kind := range []string{telemetry.DeniedDNS, telemetry.DeniedConn} {
		denied = jsonLine(t, denied, telemetry.Denial{Run: "r1", TS: "2026-11-29T10:00:00Z", Kind: kind, Name: p, Count: 2})
	}
	writeFile(t, h.state.Denied(), denied)
	writeFile(t, filepath.Join(h.ws, ".claude", p+".md"), []byte("planted\n"))
}

// outcome is the run as the sandbox hands it to the summary.
func (h *hostileProject) outcome(t *testing.T) *sandbox.Outcome {
	t.Helper()
	hv, err := telemetry.ReadHarvest(filepath.Join(h.state.Runs(), "r1", "netd"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(h.state.Runs(), "r1", "transcript.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return &sandbox.Outcome{ID: "r1", Result: "exited", Duration: time.Second, Summary: telemetry.ReadSummary(f),
		Transcript: filepath.Join(h.state.Runs(), "r1", "transcript.jsonl"), Harvest: hv,
		Notes: []string{"agent stderr: " + h.payload}, Exec: &sandbox.ExecReport{Changes: hostileExec(h.payload)}}
}

// hostileExec is what a run changed, as an agent that names files and link targets with the
// payload leaves it: a file, a link's target, a git hook.
func hostileExec(p string) []watch.ExecChange {
	return []watch.ExecChange{
		{Area: watch.AreaFile, Name: p, Change: "added", New: "fifo"},
		{Area: watch.AreaFile, Name: "Makefile", Change: "changed", Old: "sha256:00", New: "symlink:" + p},
		{Area: watch.AreaGit, Name: "hook:" + p, Change: "added", New: "sha256:00"},
	}
}

// run runs abox in the project and returns its stdout; exit 0 and 2 (doctor's failures) pass.
func (h *hostileProject) run(t *testing.T, args ...string) string {
	t.Helper()
	h.out.Reset()
	h.err.Reset()
	if args[0] != "init" {
		args = append(args, "-C", h.ws)
	}
	if code := h.app.Run(context.Background(), args); code != ExitOK && code != ExitDoctor {
		t.Fatalf("abox %s: exit %d: %s", strings.Join(args, " "), code, h.err)
	}
	if bad := rawControl(h.err.String()); bad != "" {
		t.Errorf("abox %s: stderr holds the raw %q:\n%s", strings.Join(args, " "), bad, h.err)
	}
	return h.out.String()
}

// rawControl returns the first character of s a terminal could act on: a C0 control but
// newline, DEL, a C1 control, a format character (bidi controls among them), a line or
// paragraph separator, or a byte that is not UTF-8.
func rawControl(s string) string {
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\ufffd"):
			return s[i : i+1]
		case r == '\n':
		case r < 0x20, r >= 0x7f && r < 0xa0, unicode.Is(unicode.Cf, r), r == '\u2028', r == '\u2029':
			return string(r)
		}
	}
	return ""
}

// jsonCarried is s as JSON carries it: exact, but for bytes that are not UTF-8, which decode
// as U+FFFD.
func jsonCarried(s string) string {
	b, _ := json.Marshal(s)
	var out string
	json.Unmarshal(b, &out)
	return out
}

func decodeJSON(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("invalid JSON: %v\n%s", err, data)
	}
}

func jsonLine(t *testing.T, dst []byte, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return append(append(dst, b...), '\n')
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
