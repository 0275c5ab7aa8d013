//go:build e2e

package main

import (
	"bufio"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func newTestAPI(t *testing.T) (*httptest.Server, string) {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "requests.jsonl")
	rl, err := openRequestLog(logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rl.close)
	srv := httptest.NewServer(&api{log: slog.New(slog.NewJSONHandler(io.Discard, nil)), requests: rl})
	t.Cleanup(srv.Close)
	return srv, logPath
}

func post(t *testing.T, url, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("x-api-key", "sk-secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// sseEvent is one server-sent event.
type sseEvent struct {
	name string
	data map[string]any
}

func readSSE(t *testing.T, r io.Reader) []sseEvent {
	t.Helper()
	var out []sseEvent
	var name string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var d map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &d); err != nil {
				t.Fatalf("data %q: %v", line, err)
			}
			if d["type"] != name {
				t.Errorf("event %q carries type %v", name, d["type"])
			}
			out = append(out, sseEvent{name, d})
		}
	}
	return out
}

const conversationTools = `"tools":[{"name":"Bash","input_schema":{}},{"name":"ToolSearch","input_schema":{}}]`

// TestStreamToolUse: the first answer to a scripted prompt streams a text block and the Bash
// tool use, event by event as the API sends them, and the tool's input reassembles from its
// input_json_delta pieces.
func TestStreamToolUse(t *testing.T) {
	srv, logPath := newTestAPI(t)
	resp := post(t, srv.URL+"/v1/messages?beta=true", `{"model":"m","stream":true,"max_tokens":10,`+conversationTools+
		`,"messages":[{"role":"user","content":[{"type":"text","text":"<system-reminder>x</system-reminder>"},{"type":"text","text":"bash: echo hi\nsay: ok"}]}]}`)
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("status %d, content type %q", resp.StatusCode, ct)
	}
	evs := readSSE(t, resp.Body)
	var names []string
	var input strings.Builder
	for _, ev := range evs {
		if len(names) == 0 || names[len(names)-1] != ev.name {
			names = append(names, ev.name)
		}
		if d, ok := ev.data["delta"].(map[string]any); ok && d["type"] == "input_json_delta" {
			input.WriteString(d["partial_json"].(string))
		}
	}
	want := "message_start ping content_block_start content_block_delta content_block_stop content_block_start " +
		"content_block_delta content_block_stop message_delta message_stop"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("events:\n got %s\nwant %s", got, want)
	}
	var in map[string]string
	if err := json.Unmarshal([]byte(input.String()), &in); err != nil || in["command"] != "echo hi" {
		t.Errorf("tool input %q: %v", input.String(), err)
	}
	md := evs[len(evs)-2].data
	if md["delta"].(map[string]any)["stop_reason"] != "tool_use" {
		t.Errorf("message_delta %v, want stop_reason tool_use", md)
	}
	data, _ := os.ReadFile(logPath)
	if !strings.Contains(string(data), `"kind":"conversation"`) || !strings.Contains(string(data), `"answer":"text,tool_use:Bash"`) ||
		strings.Contains(string(data), "sk-secret") || !strings.Contains(string(data), `"x-api-key":"`+Fingerprint("sk-secret")+`"`) {
		t.Errorf("request log:\n%s", data)
	}
}

// TestScriptProgress: the answer follows from the tool results after the last prompt, not from
// how many requests came: an mcp step is a ToolSearch then the call, and the final answer quotes
// every result. An earlier conversation before the prompt (a --continue) does not count.
func TestScriptProgress(t *testing.T) {
	earlier := `{"role":"user","content":"bash: old"},{"role":"assistant","content":[{"type":"tool_use","id":"t0","name":"Bash","input":{}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t0","content":"old output"}]},{"role":"assistant","content":"done"},`
	prompt := `{"role":"user","content":"mcp: mcp__abox__echo {\"text\":\"x\"}\nsay: fin"}`
	search := `,{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"ToolSearch","input":{}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"tool_reference","tool_name":"mcp__abox__echo"}]}]}`
	call := `,{"role":"assistant","content":[{"type":"tool_use","id":"t2","name":"mcp__abox__echo","input":{}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"x"}]},{"type":"text","text":"<system-reminder>r</system-reminder>"}]}`
	for _, c := range []struct{ name, messages, want string }{
		{"first", earlier + prompt, "tool_use:ToolSearch"},
		{"after search", earlier + prompt + search, "tool_use:mcp__abox__echo"},
		{"after call", earlier + prompt + search + call, "text"},
	} {
		var req request
		if err := json.Unmarshal([]byte(`{"model":"m",`+conversationTools+`,"messages":[`+c.messages+`]}`), &req); err != nil {
			t.Fatal(err)
		}
		ans := req.next()
		if got := ans.summary(); !strings.HasSuffix(got, c.want) {
			t.Errorf("%s: answer %s, want %s", c.name, got, c.want)
		}
		if c.name == "after call" {
			if text := ans.blocks[0].Text; text != "fin\n[ToolSearch] tool_reference:mcp__abox__echo\n[mcp__abox__echo] x" {
				t.Errorf("final answer %q", text)
			}
		}
	}
}

// TestOtherRequests: no stream gives one message object; a side request (no Bash offered, or
// no script in the prompt) a plain answer; count_tokens a count; fail: the API's error object; an unknown path its 404.
func TestOtherRequests(t *testing.T) {
	srv, _ := newTestAPI(t)
	decode := func(resp *http.Response) map[string]any {
		var v map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	msg := decode(post(t, srv.URL+"/v1/messages", `{"model":"small","max_tokens":5,"messages":[{"role":"user","content":"a title please"}]}`))
	if msg["type"] != "message" || msg["stop_reason"] != "end_turn" || msg["model"] != "small" {
		t.Errorf("side request answered %v", msg)
	}
	warmup := decode(post(t, srv.URL+"/v1/messages", `{"model":"m",`+conversationTools+`,"messages":[{"role":"user","content":"Warmup"}]}`))
	if warmup["stop_reason"] != "end_turn" {
		t.Errorf("a request offering Bash without a script answered %v, want a side answer", warmup)
	}
	if n := decode(post(t, srv.URL+"/v1/messages/count_tokens", `{"model":"m","messages":[]}`)); n["input_tokens"] == nil {
		t.Errorf("count_tokens answered %v", n)
	}
	resp := post(t, srv.URL+"/v1/messages", `{"model":"m","stream":true,`+conversationTools+`,"messages":[{"role":"user","content":"fail: scripted"}]}`)
	if e := decode(resp); resp.StatusCode != 400 || e["type"] != "error" || e["error"].(map[string]any)["message"] != "scripted" {
		t.Errorf("fail: answered %d %v", resp.StatusCode, e)
	}
	if resp := post(t, srv.URL+"/v1/other", `{}`); resp.StatusCode != 404 || decode(resp)["type"] != "error" {
		t.Errorf("unknown path answered %d", resp.StatusCode)
	}
}

// TestFetchesURLSources: as the API's servers do, the stand-in fetches a URL source wherever a
// body names one (here in a tool result, and in count_tokens), and logs each fetch.
func TestFetchesURLSources(t *testing.T) {
	var got []string
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = append(got, r.URL.String()) }))
	defer target.Close()
	srv, logPath := newTestAPI(t)
	img := `{"type":"image","source":{"type":"url","url":"` + target.URL + `/i.png?d=secret"}}`
	post(t, srv.URL+"/v1/messages", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[`+img+`]}]}]}`)
	post(t, srv.URL+"/v1/messages/count_tokens", `{"model":"m","messages":[{"role":"user","content":[`+img+`]}]}`)
	if len(got) != 2 || got[0] != "/i.png?d=secret" {
		t.Errorf("the target saw %q, want the image fetched twice", got)
	}
	data, _ := os.ReadFile(logPath)
	if !strings.Contains(string(data), `"fetched":["`+target.URL+`/i.png?d=secret 200 OK"]`) {
		t.Errorf("the request log does not show the fetch:\n%s", data)
	}
}
