package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stubGateway serves MCP over streamable HTTP behind the gateway's bearer check, with two tools.
func stubGateway(t *testing.T, token string) *httptest.Server {
	t.Helper()
	return stubGatewayAuth(t, func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer "+token }, nil)
}

// stubGatewayAuth is stubGateway with its own bearer check, and a record of every request.
func stubGatewayAuth(t *testing.T, authorized func(*http.Request) bool, seen *[]string) *httptest.Server {
	t.Helper()
	var mu sync.Mutex
	srv := mcp.NewServer(&mcp.Implementation{Name: "stub-gateway", Version: "1.0"}, nil)
	for _, name := range []string{"get_issue", "now"} {
		srv.AddTool(&mcp.Tool{Name: name, Description: "does " + name, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if seen != nil {
			mu.Lock()
			*seen = append(*seen, r.Method+" "+r.Header.Get("Authorization"))
			mu.Unlock()
		}
		if r.Header.Get("Origin") != "" {
			http.Error(w, "Forbidden", http.StatusForbidden)
			return
		}
		if !authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="MCP Gateway"`)
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts
}

func TestProbe(t *testing.T) {
	ts := stubGateway(t, testToken)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res := Probe(ctx, ts.URL+"/mcp", testToken)
	if !res.OK || res.Server != "stub-gateway 1.0" {
		t.Fatalf("Probe = %+v", res)
	}
	if got := strings.Join(res.ToolNames(), ","); got != "get_issue,now" {
		t.Errorf("tools = %s", got)
	}
	if !res.AuthEnforced() || *res.Auth != (AuthCheck{NoToken: 401, WrongToken: 401}) {
		t.Errorf("Probe.Auth = %+v, want both refused with 401", res.Auth)
	}
}

// TestProbeOpenGateway: a gateway that accepts anything answers the probe, which then finds
// that it accepts an initialize without a token and one with a wrong token; the sessions those
// opened are closed again, and the real token is never sent but with the client's requests.
func TestProbeOpenGateway(t *testing.T) {
	for _, tc := range []struct {
		name       string
		authorized func(*http.Request) bool
		want       AuthCheck
	}{
		{"accepts anything", func(*http.Request) bool { return true }, AuthCheck{NoToken: 200, WrongToken: 200}},
		{"accepts any bearer", func(r *http.Request) bool { return strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") },
			AuthCheck{NoToken: 401, WrongToken: 200}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var seen []string
			ts := stubGatewayAuth(t, tc.authorized, &seen)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			res := Probe(ctx, ts.URL+"/mcp", testToken)
			if !res.OK || res.AuthEnforced() || res.Auth == nil || *res.Auth != tc.want {
				t.Fatalf("Probe = %+v (auth %+v), want answered but not enforced, %+v", res, res.Auth, tc.want)
			}
			var wrong, deletes int
			for _, r := range seen {
				method, auth, _ := strings.Cut(r, " ")
				if strings.HasPrefix(auth, "Bearer abox-wrong-") {
					wrong++
				}
				if method == http.MethodDelete && auth != "Bearer "+testToken {
					deletes++
				}
			}
			if wrong == 0 || deletes != map[bool]int{true: 2, false: 1}[tc.want.NoToken == 200] {
				t.Errorf("requests %q: want wrong-token requests and a DELETE of each session an open gateway granted", seen)
			}
		})
	}
}

// TestProbeAuthUnanswered: requests without the token that get no answer prove nothing.
func TestProbeAuthUnanswered(t *testing.T) {
	a := checkAuth(context.Background(), "http://127.0.0.1:1/mcp", testToken)
	if a.Enforced() || a.NoToken != 0 || a.WrongToken != 0 || !strings.Contains(a.Error, "without a token: ") {
		t.Errorf("checkAuth of a closed port = %+v", a)
	}
	if s := a.String(); !strings.HasPrefix(s, "an initialize without a token got no answer, one with a wrong token no answer (") {
		t.Errorf("String = %q", s)
	}
}

func TestProbeWrongToken(t *testing.T) {
	ts := stubGateway(t, testToken)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, tok := range []string{"wrong", ""} {
		res := Probe(ctx, ts.URL+"/mcp", tok)
		if res.OK || res.Status != http.StatusUnauthorized || !res.Unauthorized() {
			t.Errorf("Probe with token %q = %+v, want 401", tok, res)
		}
		if strings.Contains(res.Error, testToken) {
			t.Error("the error holds the token")
		}
	}
}

func TestProbeUnreachable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res := Probe(ctx, "http://127.0.0.1:1/mcp", testToken)
	if res.OK || res.Status != 0 || res.Error == "" {
		t.Errorf("Probe of a closed port = %+v", res)
	}
}

func TestParseProbe(t *testing.T) {
	if _, err := ParseProbe([]byte("not json")); err == nil {
		t.Error("ParseProbe accepted junk")
	}
	r, err := ParseProbe([]byte(probeOK))
	if err != nil || !r.OK || r.ToolNames()[0] != "get_issue" {
		t.Errorf("ParseProbe = %+v, %v", r, err)
	}
}

// TestProbeCommand: the token comes from the first line of stdin; a URL that is not http(s),
// or no token, is a failed result without a request.
func TestProbeCommand(t *testing.T) {
	ts := stubGateway(t, testToken)
	ctx := context.Background()
	res := ProbeCommand(ctx, ts.URL+"/mcp", strings.NewReader(testToken+"\nignored\n"), 10*time.Second)
	if !res.OK || strings.Join(res.ToolNames(), ",") != "get_issue,now" {
		t.Fatalf("ProbeCommand = %+v", res)
	}
	for _, c := range []struct{ url, stdin, want string }{
		{"file:///etc/passwd", testToken, "not an http(s) URL: file:///etc/passwd"},
		{"http://", testToken, "not an http(s) URL: http://"},
		{ts.URL + "/mcp", "", "no token on stdin"},
		{ts.URL + "/mcp", "\n" + testToken, "no token on stdin"},
	} {
		res := ProbeCommand(ctx, c.url, strings.NewReader(c.stdin), time.Second)
		if res.OK || res.Error != c.want || res.Tools == nil {
			t.Errorf("ProbeCommand(%q, %q) = %+v, want error %q and an empty tool list", c.url, c.stdin, res, c.want)
		}
	}
}
