package netd

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func allowOnly(names ...string) func(string) bool {
	return func(n string) bool {
		for _, a := range names {
			if n == a {
				return true
			}
		}
		return false
	}
}

func TestFilterTools(t *testing.T) {
	tests := []struct {
		name, in, want string // want "" = unchanged
	}{
		{"list", `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","x":1},{"name":"b"}],"nextCursor":"c"}}`,
			`{"id":1,"jsonrpc":"2.0","result":{"nextCursor":"c","tools":[{"name":"a","x":1}]}}`},
		{"all allowed", `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}]}}`, ""},
		{"batch", `[{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"b"}]}},{"jsonrpc":"2.0","id":2,"result":{}}]`,
			`[{"id":1,"jsonrpc":"2.0","result":{"tools":[]}},{"jsonrpc":"2.0","id":2,"result":{}}]`},
		{"nameless tool dropped", `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"Name":"a"},{"name":7},{"name":null},{"x":"a"}]}}`,
			`{"id":1,"jsonrpc":"2.0","result":{"tools":[{"Name":"a"}]}}`},
		// A Go client decodes members case-insensitively: every spelling is filtered (found by
		// FuzzMCPFilter: "resUlt" carried a tool past the filter).
		{"member case variants", `{"jsonrpc":"2.0","id":1,"resUlt":{"tools":[{"name":null}]},"result":{"TOOLS":[{"name":"b"}],"tools":[{"name":"a"}]}}`,
			`{"id":1,"jsonrpc":"2.0","resUlt":{"tools":[]},"result":{"TOOLS":[],"tools":[{"name":"a"}]}}`},
		{"unicode fold", `{"jsonrpc":"2.0","id":1,"reſult":{"tools":[{"name":"b"}]}}`,
			`{"id":1,"jsonrpc":"2.0","reſult":{"tools":[]}}`},
		{"a second name refused", `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","NAME":"b"}]}}`,
			`{"id":1,"jsonrpc":"2.0","result":{"tools":[]}}`},
		{"call result untouched", `{"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":{"tools":[{"name":"b"}]}}}`, ""},
		{"error untouched", `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}`, ""},
		{"not json", `{"result":`, ""},
		{"big numbers kept", `{"jsonrpc":"2.0","id":12345678901234567890,"result":{"tools":[{"name":"a","n":1e400},{"name":"b"}]}}`,
			`{"id":12345678901234567890,"jsonrpc":"2.0","result":{"tools":[{"name":"a","n":1e400}]}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := filterTools([]byte(tc.in), allowOnly("a"))
			want := tc.want
			if want == "" {
				want = tc.in
			}
			if string(got) != want || changed != (tc.want != "") {
				t.Errorf("filterTools = %s, %v\nwant %s, %v", got, changed, want, tc.want != "")
			}
		})
	}
}

func TestParseRPC(t *testing.T) {
	tests := []struct {
		in      string
		methods string // method:tool,… of the messages
		batch   bool
		wantErr string
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"name":"x"}}}`, "tools/call:a", false, ""},
		{` [{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":"x","result":{}}]`, "notifications/initialized:,:", true, ""},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/c\u0061ll","params":{"name":"b"}}`, "tools/call:b", false, ""},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"NAME":"b","name":"a"}}`, "", false, `params member "NAME"`},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":""}}`, "", false, "without a tool name"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":["a"]}`, "", false, "without params object"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, "", false, "without params object"},
		{`{"jsonrpc":"2.0","id":1,"method":7}`, "", false, "method"},
		{`{"jsonrpc":"1.0","id":1,"method":"x"}`, "", false, "jsonrpc"},
		{`{"jsonrpc":"2.0","id":1,"method":"x","extra":1}`, "", false, `unknown member "extra"`},
		{`{"jsonrpc":"2.0","id":1,"method":"x"} {}`, "", false, "data after the value"},
		{`"str"`, "", false, "not a JSON object"},
		{`[1]`, "", true, "not a JSON object"},
		{strings.Repeat("[", 100) + strings.Repeat("]", 100), "", true, "nested too deeply"},
		{`{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":{"b":1,"b":2}}}`, "", false, `duplicate key "b"`},
	}
	for _, tc := range tests {
		msgs, batch, err := parseRPC([]byte(tc.in))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parseRPC(%s) = %v, want error %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		var got []string
		for _, m := range msgs {
			got = append(got, m.method+":"+m.tool)
		}
		if err != nil || strings.Join(got, ",") != tc.methods || batch != tc.batch {
			t.Errorf("parseRPC(%s) = %v, %v, %v; want %s, %v", tc.in, got, batch, err, tc.methods, tc.batch)
		}
	}
}

func TestParseRPCLeavesBodyAlone(t *testing.T) {
	body := []byte(`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}},{"jsonrpc":"2.0","method":"x"}]`)
	before := string(body)
	if _, _, err := parseRPC(body); err != nil || string(body) != before {
		t.Errorf("parseRPC changed the body it forwards: %s (%v)", body, err)
	}
}

func TestRewriteEvent(t *testing.T) {
	filter := func(b []byte) []byte { out, _ := filterTools(b, allowOnly("a")); return out }
	tests := []struct{ in, want string }{
		{"event: message\nid: 7\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"name\":\"b\"}]}}\n\n",
			"event: message\nid: 7\ndata: {\"id\":1,\"jsonrpc\":\"2.0\",\"result\":{\"tools\":[]}}\n\n"},
		{"data: {\"jsonrpc\":\"2.0\",\"id\":1,\r\ndata:\"result\":{\"tools\":[{\"name\":\"b\"}]}}\r\n\r\n",
			"data: {\"id\":1,\"jsonrpc\":\"2.0\",\"result\":{\"tools\":[]}}\n\r\n"},
		{": keep-alive\n\n", ": keep-alive\n\n"},
		{"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\r\n\r\n", "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\r\n\r\n"},
	}
	for _, tc := range tests {
		var out bytes.Buffer
		flushes := 0
		err := copySSE(&out, func() error { flushes++; return nil }, strings.NewReader(tc.in), filter)
		if err != nil || out.String() != tc.want || flushes != 1 {
			t.Errorf("copySSE(%q) = %q, %v, %d flushes; want %q, 1 flush", tc.in, out.String(), err, flushes, tc.want)
		}
	}
}

// FuzzMCPFilter checks that filterTools never panics, leaves no refused tool in a tools list,
// returns valid JSON when it changes anything, and is idempotent.
func FuzzMCPFilter(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"},{"name":"b"}]}}`))
	f.Add([]byte(`[{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"b","inputSchema":{}}]}},{"jsonrpc":"2.0","method":"x"}]`))
	f.Fuzz(func(t *testing.T, in []byte) {
		allowed := allowOnly("a")
		out, changed := filterTools(in, allowed)
		if !changed {
			if !bytes.Equal(out, in) {
				t.Fatalf("unchanged, but the output differs")
			}
		} else if !json.Valid(out) {
			t.Fatalf("changed into invalid JSON: %s", out)
		}
		for _, name := range listedTools(out) {
			if !allowed(name) {
				t.Fatalf("tool %q survives in %s", name, out)
			}
		}
		if again, ch := filterTools(out, allowed); ch || !bytes.Equal(again, out) {
			t.Fatalf("not idempotent: %s → %s", out, again)
		}
	})
}

// listedTools returns every tool name in result.tools of a message or batch, as a JSON-RPC
// client would read them.
func listedTools(body []byte) []string {
	var batch []json.RawMessage
	if json.Unmarshal(body, &batch) != nil {
		batch = []json.RawMessage{body}
	}
	var names []string
	for _, m := range batch {
		var msg struct {
			Result struct {
				Tools []map[string]json.RawMessage `json:"tools"`
			} `json:"result"`
		}
		json.Unmarshal(m, &msg)
		for _, tool := range msg.Result.Tools {
			var name string
			if json.Unmarshal(tool["name"], &name) == nil {
				names = append(names, name)
			}
		}
	}
	return names
}

// FuzzParseRPC checks that whatever parseRPC accepts, a Go server decoding the same body into
// structs (encoding/json: case-insensitive members, last duplicate wins) reads the same method
// and tool.
func FuzzParseRPC(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}`))
	f.Add([]byte(`[{"jsonrpc":"2.0","id":1,"Method":"tools/call","params":{"Name":"b","name":"a"}}]`))
	f.Fuzz(func(t *testing.T, in []byte) {
		msgs, batch, err := parseRPC(in)
		if err != nil {
			return
		}
		raw := []json.RawMessage{in}
		if batch {
			raw = nil
			json.Unmarshal(in, &raw)
		}
		for i, m := range msgs {
			var server struct {
				Method string
				Params struct{ Name string }
			}
			json.Unmarshal(raw[i], &server)
			if server.Method != m.method || (m.method == methodToolsCall && server.Params.Name != m.tool) {
				t.Fatalf("netd read %q %q, a Go server reads %q %q from %s", m.method, m.tool, server.Method, server.Params.Name, raw[i])
			}
		}
	})
}
