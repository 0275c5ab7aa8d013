package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stubGateway serves MCP over streamable HTTP behind the gateway's bearer check, with two tools.
func stubGateway(t *testing.T, token string) *httptest.Server {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "stub-gateway", Version: "1.0"}, nil)
	for _, name := range []string{"get_issue", "now"} {
		srv.AddTool(&mcp.Tool{Name: name, Description: "does " + name, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Origin") != "" {
			http.Error(w, "Forbidden", http.StatusForbidden)
			return
		}
		if r.Header.Get("Authorization") != "Bearer "+token {
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
