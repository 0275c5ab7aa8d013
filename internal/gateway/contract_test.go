package gateway

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// contractGateway answers HTTP as docker/mcp-gateway does, by the contract written from its
// source (pkg/gateway/auth.go and transport.go at v0.43.3) and checked against the real image on
// Docker Engine 20.10.24, not as abox's probe expects: an Origin other than loopback and a
// non-loopback Host on a loopback address get 403; with the token check on, anything but exactly
// "Authorization: Bearer <token>" gets 401 with `WWW-Authenticate: Bearer realm="MCP Gateway"`;
// paths other than /mcp get 307 after the check; a POST needs Content-Type exactly
// application/json (else 415) and an Accept holding application/json and text/event-stream
// (else 400). enforce false is the gateway before v0.43.1 in a container
// (DOCKER_MCP_IN_CONTAINER=1), which checked no token at all (docker/mcp-gateway#243).
//
// Answers that are not about the token are recorded in rejected: a probe that drew one could
// read a refusal for a reason other than the token.
type contractGateway struct {
	*httptest.Server
	mu       sync.Mutex
	rejected []string
}

func newContractGateway(t *testing.T, token string, enforce bool) *contractGateway {
	t.Helper()
	g := &contractGateway{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "Docker AI MCP Gateway", Version: "2.0.1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	reject := func(w http.ResponseWriter, r *http.Request, status int, why string) {
		g.mu.Lock()
		g.rejected = append(g.rejected, r.Method+" "+r.URL.Path+": "+why)
		g.mu.Unlock()
		http.Error(w, http.StatusText(status), status)
	}
	g.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" && !loopbackName(o) {
			reject(w, r, http.StatusForbidden, "Origin "+o)
			return
		}
		if host, _, _ := net.SplitHostPort(r.Host); !loopbackName(host) {
			reject(w, r, http.StatusForbidden, "Host "+r.Host+" on a loopback address")
			return
		}
		if enforce && r.Header.Get("Authorization") != "Bearer "+token {
			w.Header().Set("WWW-Authenticate", `Bearer realm="MCP Gateway"`)
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		if r.URL.Path != "/mcp" {
			reject(w, r, http.StatusTemporaryRedirect, "path")
			return
		}
		if r.Method == http.MethodPost {
			if ct := r.Header.Get("Content-Type"); ct != "application/json" {
				reject(w, r, http.StatusUnsupportedMediaType, "Content-Type "+ct)
				return
			}
			if a := r.Header.Get("Accept"); !strings.Contains(a, "application/json") || !strings.Contains(a, "text/event-stream") {
				reject(w, r, http.StatusBadRequest, "Accept "+a)
				return
			}
		}
		mcpHandler.ServeHTTP(w, r)
	}))
	t.Cleanup(g.Close)
	return g
}

func loopbackName(s string) bool {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "http://"), "https://")
	if h, _, err := net.SplitHostPort(s); err == nil {
		s = h
	}
	return s == "localhost" || s == "127.0.0.1" || s == "::1" || s == "[::1]"
}

// TestProbeAgainstContract: the independent oracle of what a real gateway answers is its
// contract, not abox's stubs. A gateway of v0.43.1 or later, probed as abox probes it, answers
// the token and refuses both requests without it with 401 (never 403, 415 or 400: the probe's
// requests meet every other condition, so the 401s are about the token); one from before, in a
// container, answers all three, and abox refuses to use it.
func TestProbeAgainstContract(t *testing.T) {
	for _, tc := range []struct {
		name    string
		enforce bool
		want    AuthCheck
	}{
		{"v0.43.1 and later", true, AuthCheck{NoToken: 401, WrongToken: 401}},
		{"before v0.43.1, in a container", false, AuthCheck{NoToken: 200, WrongToken: 200}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newContractGateway(t, testToken, tc.enforce)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			res := Probe(ctx, g.URL+"/mcp", testToken)
			if !res.OK || res.Server != "Docker AI MCP Gateway 2.0.1" {
				t.Fatalf("Probe = %+v, want the gateway answered with the token", res)
			}
			if res.Auth == nil || *res.Auth != tc.want || res.AuthEnforced() != tc.enforce {
				t.Errorf("Probe.Auth = %+v, want %+v (enforced: %v)", res.Auth, tc.want, tc.enforce)
			}
			g.mu.Lock()
			defer g.mu.Unlock()
			if len(g.rejected) != 0 {
				t.Errorf("the gateway refused the probe for something other than the token: %q", g.rejected)
			}
		})
	}
}
