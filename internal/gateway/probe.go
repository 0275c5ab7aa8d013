package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ProbeResult is what `abox mcp-probe` prints, as one JSON object on stdout, and what the host
// reads back.
type ProbeResult struct {
	OK     bool   `json:"ok"`
	Status int    `json:"status,omitempty"` // HTTP status of a refused request, e.g. 401
	Error  string `json:"error,omitempty"`
	Server string `json:"server,omitempty"` // serverInfo: "name version"
	// Tools are the tool definitions of tools/list as the gateway sent them: what an agent
	// would see before netd's narrowing.
	Tools []json.RawMessage `json:"tools"`
	// Auth is how the gateway answered requests without its token, sent once it answered with
	// it; nil when the probe did not get that far.
	Auth *AuthCheck `json:"auth,omitempty"`
}

// AuthEnforced reports whether the gateway refused both requests without its token.
func (r *ProbeResult) AuthEnforced() bool { return r.Auth.Enforced() }

// Unauthorized reports whether the gateway refused the token.
func (r *ProbeResult) Unauthorized() bool {
	return r.Status == http.StatusUnauthorized || r.Status == http.StatusForbidden
}

// ToolNames returns the names of the listed tools.
func (r *ProbeResult) ToolNames() []string {
	var out []string
	for _, t := range r.Tools {
		var v struct{ Name string }
		if json.Unmarshal(t, &v) == nil {
			out = append(out, v.Name)
		}
	}
	return out
}

// Probe checks an MCP endpoint as a client does: a streamable-HTTP initialize with the bearer
// token, then tools/list (every page), then the session is closed (DELETE); and then that the
// endpoint refuses an initialize without the token and one with a wrong token (Auth). It never
// returns an error: a failure is a result with OK false. The token appears in no result field.
func Probe(ctx context.Context, url, token string) *ProbeResult {
	res := &ProbeResult{Tools: []json.RawMessage{}}
	rt := &bearer{base: &http.Transport{Proxy: nil}, token: token}
	client := mcp.NewClient(&mcp.Implementation{Name: "abox-probe", Version: "1"}, nil)
	transport := &mcp.StreamableClientTransport{
		Endpoint: url, HTTPClient: &http.Client{Transport: rt}, MaxRetries: -1, DisableStandaloneSSE: true,
	}
	fail := func(what string, err error) *ProbeResult {
		res.OK, res.Status = false, rt.refused()
		res.Error = scrub(fmt.Sprintf("%s: %v", what, err), token)
		if res.Unauthorized() {
			res.Error = fmt.Sprintf("%s: the gateway refused the token (HTTP %d)", what, res.Status)
		}
		return res
	}
	cs, err := client.Connect(ctx, transport, nil)
	if err != nil {
		return fail("initialize", err)
	}
	defer cs.Close()
	if ir := cs.InitializeResult(); ir != nil && ir.ServerInfo != nil {
		res.Server = strings.TrimSpace(ir.ServerInfo.Name + " " + ir.ServerInfo.Version)
	}
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return fail("tools/list", err)
		}
		b, err := json.Marshal(tool)
		if err != nil {
			return fail("tools/list", err)
		}
		res.Tools = append(res.Tools, b)
	}
	res.OK = true
	res.Auth = checkAuth(ctx, url, token)
	return res
}

// bearer adds the token to every request and remembers the first refusal.
type bearer struct {
	base   http.RoundTripper
	token  string
	mu     sync.Mutex
	status int
}

func (b *bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.token)
	req.Header.Del("Origin")
	resp, err := b.base.RoundTrip(req)
	if err == nil && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) {
		b.mu.Lock()
		if b.status == 0 {
			b.status = resp.StatusCode
		}
		b.mu.Unlock()
	}
	return resp, err
}

func (b *bearer) refused() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.status
}

// ParseProbe decodes what `abox mcp-probe` printed.
func ParseProbe(stdout []byte) (*ProbeResult, error) {
	var r ProbeResult
	if err := json.Unmarshal(stdout, &r); err != nil {
		return nil, errors.New("the probe printed no result")
	}
	return &r, nil
}

// scrub removes secret from s. Error texts never hold the token, but a message that reaches a
// terminal or a log is cleaned anyway.
func scrub(s, secret string) string {
	if secret == "" {
		return s
	}
	return strings.ReplaceAll(s, secret, "«gateway-token»")
}

// maxTokenLine bounds what [ProbeCommand] reads of its stdin.
const maxTokenLine = 4096

// ProbeCommand is `abox mcp-probe URL`, run by abox inside the netd image on the gateway's
// network (the gateway publishes nothing, so the host cannot reach it): the token is the first
// line of stdin, never in an argv. A URL that is not http(s) or a missing token is a result with
// OK false, as every failure of [Probe] is; timeout bounds the probe, from when it starts.
func ProbeCommand(ctx context.Context, rawURL string, stdin io.Reader, timeout time.Duration) *ProbeResult {
	res := &ProbeResult{Tools: []json.RawMessage{}}
	token, err := readTokenLine(stdin)
	u, uerr := url.Parse(rawURL)
	switch {
	case uerr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		res.Error = "not an http(s) URL: " + rawURL
	case err != nil || token == "":
		res.Error = "no token on stdin"
	default:
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		res = Probe(ctx, rawURL, token)
	}
	return res
}

// readTokenLine reads the first line of r, at most maxTokenLine bytes.
func readTokenLine(r io.Reader) (string, error) {
	line, err := bufio.NewReader(io.LimitReader(r, maxTokenLine)).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", err
	}
	return strings.TrimSpace(line), nil
}
