package netd

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aboxhq/abox/internal/policy"
)

// mcpForwarder is the agent's only MCP endpoint (http://127.0.0.1:<MCPPort>/mcp). It forwards
// streamable HTTP to the profile's gateway and adds the gateway token, which the agent never
// holds, so the agent cannot steal or replay it. Because the gateway serves every project of its
// profile, the forwarder narrows tools to the project's own: tools/list results are filtered and
// a tools/call of another tool is answered with an error without reaching the gateway.
type mcpForwarder struct {
	cfg      *current
	client   *http.Client
	log      *jsonl
	now      func() time.Time
	sessions mcpSessions // the gateway sessions to close at stop (mcpsessions.go)
	// held are the request and response bodies the forwarder holds in memory, all requests
	// together ([maxMCPBuffered]); bodyTimeout bounds a request body's reading, from when it
	// starts.
	held        byteBudget
	bodyTimeout time.Duration
}

// Limits of the forwarder.
const (
	mcpPath         = "/mcp"
	maxMCPRequest   = 8 << 20
	maxMCPResponse  = 32 << 20
	refusedToolCode = rpcInvalidParams
	// maxMCPBuffered bounds the request bodies and the JSON responses the forwarder holds at
	// once: 64 connections each sending an 8 MiB body would be twice netd's memory. A request
	// past it is answered 429 before its body is read, a response 503.
	maxMCPBuffered = 40 << 20
	// mcpBodyTimeout bounds the reading of a request body: a slow upload would otherwise hold
	// its share of the budget as long as it likes.
	mcpBodyTimeout = 30 * time.Second
)

// Headers passed on, each way; anything else (Authorization, Origin, cookies, forwarding
// headers) is dropped.
var (
	mcpRequestHeaders  = []string{"Accept", "Content-Type", "Mcp-Session-Id", "Mcp-Protocol-Version", "Last-Event-Id", "User-Agent"}
	mcpResponseHeaders = []string{"Content-Type", "Mcp-Session-Id", "Mcp-Protocol-Version", "Cache-Control"}
)

func newMCPForwarder(cfg *current, log *jsonl) *mcpForwarder {
	tr := &http.Transport{
		DialContext:         gatewayDialer(cfg),
		Proxy:               nil,
		DisableCompression:  true,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     90 * time.Second,
	}
	return &mcpForwarder{cfg: cfg, client: &http.Client{Transport: tr}, log: log, now: time.Now,
		held: byteBudget{max: maxMCPBuffered}, bodyTimeout: mcpBodyTimeout}
}

// gatewayDialer returns the MCP forwarder's only way out: a dial of the gateway's address as the
// supervisor was given it. The upstream URL's host is ignored (it names the gateway for the
// Host header only), so nothing netd resolves, and nothing the agent could answer, decides
// where the token goes.
func gatewayDialer(cfg *current) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, _, _ string) (net.Conn, error) {
		gw := cfg.get().gateway
		if !gw.IsValid() {
			return nil, errors.New("netd has no gateway address")
		}
		ctx, cancel := context.WithTimeout(ctx, dialTimeout)
		defer cancel()
		var d net.Dialer
		return d.DialContext(ctx, "tcp4", gw.String())
	}
}

// ServeHTTP handles one request of the agent's MCP client.
func (f *mcpForwarder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := f.now()
	cfg := f.cfg.get()
	refuse := func(status int, reason string) {
		http.Error(w, "abox: "+reason, status)
		f.logOne(start, r.Method, policy.Denied, reason, status)
	}
	switch {
	case r.URL.Path != mcpPath:
		refuse(http.StatusNotFound, "no such endpoint")
	case cfg.mcp == nil:
		refuse(http.StatusServiceUnavailable, "this project has no MCP servers")
	case cfg.token == "":
		refuse(http.StatusServiceUnavailable, "netd has no gateway token")
	case !cfg.gateway.IsValid():
		refuse(http.StatusServiceUnavailable, "netd has no gateway address")
	case r.Method == http.MethodPost:
		f.post(w, r, cfg, start)
	case r.Method == http.MethodGet || r.Method == http.MethodDelete:
		f.forward(w, r, cfg, nil, []rpcMessage{{method: r.Method}}, start)
	default:
		refuse(http.StatusMethodNotAllowed, "method "+r.Method+" not allowed")
	}
}

// post checks a POST body and forwards it, or refuses it without forwarding.
func (f *mcpForwarder) post(w http.ResponseWriter, r *http.Request, cfg *config, start time.Time) {
	if r.ContentLength > maxMCPRequest {
		http.Error(w, "abox: request too large", http.StatusRequestEntityTooLarge)
		f.logOne(start, "", policy.Denied, "request body over 8 MiB", http.StatusRequestEntityTooLarge)
		return
	}
	want := r.ContentLength // a body of unknown length holds a place for the largest one
	if want < 0 {
		want = maxMCPRequest + 1
	}
	if !f.held.take(want) {
		w.Header().Set("Retry-After", "1")
		http.Error(w, "abox: too many request bytes in flight", http.StatusTooManyRequests)
		f.logOne(start, "", policy.Denied, "too many request bytes in flight", http.StatusTooManyRequests)
		return
	}
	defer f.held.give(want)
	body, err := f.readRequest(w, r)
	if err != nil {
		http.Error(w, "abox: request too large or unreadable", http.StatusRequestEntityTooLarge)
		f.logOne(start, "", policy.Denied, err.Error(), http.StatusRequestEntityTooLarge)
		return
	}
	msgs, batch, err := parseRPC(body)
	if err != nil {
		code := rpcInvalidRequest
		if errors.Is(err, errInvalidJSON) {
			code = rpcParseError
		}
		writeJSON(w, http.StatusBadRequest, rpcError(nil, code, "abox: "+err.Error()))
		f.logOne(start, "", policy.Denied, err.Error(), http.StatusBadRequest)
		return
	}
	if refused := refusedMessages(cfg, msgs); len(refused) > 0 {
		f.refuseCalls(w, msgs, batch, refused, start)
		return
	}
	f.forward(w, r, cfg, body, msgs, start)
}

// readRequest reads the request's body, of at most maxMCPRequest bytes, within bodyTimeout of
// now. The buffer it returns is what the caller's share of the budget holds.
func (f *mcpForwarder) readRequest(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if err := http.NewResponseController(w).SetReadDeadline(f.now().Add(f.bodyTimeout)); err != nil {
		return nil, fmt.Errorf("cannot bound the body's reading: %w", err)
	}
	body, err := readBounded(r.Body, r.ContentLength, maxMCPRequest)
	if err == nil && int64(len(body)) > maxMCPRequest {
		err = errors.New("request body over 8 MiB")
	}
	return body, err
}

// rpcRefusal is how the forwarder answers one message itself: a JSON-RPC error code, the verdict
// logged and the reason.
type rpcRefusal struct {
	code            int
	verdict, reason string
}

// methodDiscover is SEP-2575's stateless server/discover, which MCP clients of protocol
// 2026-07-28 and later (Claude Code among them) send before initialize. netd answers it itself
// with "method not found", the JSON-RPC 2.0 error of a server that does not implement a method
// and the one on which such clients fall back to initialize. It is not forwarded: the stateless
// protocol it negotiates carries no MCP session and adds methods (subscriptions/listen) netd
// neither tracks nor narrows, while initialize keeps the agent on the handshake netd checks. The
// gateway at its contracted version (go-sdk v1.4.1) predates the method anyway. The answer is
// HTTP 200, as for every JSON-RPC error netd sends, which is what Claude Code falls back on.
const methodDiscover = "server/discover"

// refusedMessages returns, by index, the messages the forwarder answers itself: a tools/call of
// a tool the project may not use, the methods that reach past tools, and server/discover. The
// gateway serves the union of every project on its profile, and resources, prompts and
// completions carry no server the project's narrowing could be checked against, so they are
// not forwarded at all.
func refusedMessages(cfg *config, msgs []rpcMessage) map[int]rpcRefusal {
	refused := map[int]rpcRefusal{}
	for i, m := range msgs {
		switch {
		case m.method == methodToolsCall:
			if _, ok := cfg.toolAllowed(m.tool); !ok {
				refused[i] = rpcRefusal{refusedToolCode, policy.Denied, fmt.Sprintf("tool %q is not allowed for this project", m.tool)}
			}
		case m.method == methodDiscover:
			refused[i] = rpcRefusal{rpcMethodNotFound, policy.Answered, "netd answers it as a server without the method does; the client goes on with initialize"}
		case !forwardedMethod(m.method):
			refused[i] = rpcRefusal{refusedToolCode, policy.Denied, fmt.Sprintf("method %q is not forwarded: the gateway serves other projects' servers too", m.method)}
		}
	}
	return refused
}

// forwardedMethod reports whether netd forwards a JSON-RPC method: the life cycle, tools and
// notifications. "" is a client's response to a server request.
func forwardedMethod(method string) bool {
	switch method {
	case "", "initialize", "ping", "tools/list", methodToolsCall, "logging/setLevel":
		return true
	}
	return strings.HasPrefix(method, "notifications/")
}

// refuseCalls answers every request of the body with a JSON-RPC error, forwarding nothing: a
// batch is refused whole when one of its messages is.
func (f *mcpForwarder) refuseCalls(w http.ResponseWriter, msgs []rpcMessage, batch bool, refused map[int]rpcRefusal, start time.Time) {
	var replies []json.RawMessage
	for i, m := range msgs {
		r, own := refused[i]
		if !own {
			r = rpcRefusal{refusedToolCode, policy.Denied, "batch refused: it holds a message that is not allowed"}
		}
		if m.id != nil && m.method != "" {
			replies = append(replies, rpcError(m.id, r.code, "abox: "+r.reason))
		}
		f.logMsg(start, m, r.verdict, r.reason, http.StatusOK)
	}
	switch {
	case len(replies) == 0:
		w.WriteHeader(http.StatusAccepted)
	case batch:
		b, _ := json.Marshal(replies)
		writeJSON(w, http.StatusOK, b)
	default:
		writeJSON(w, http.StatusOK, replies[0])
	}
}

// forward sends the request to the gateway with netd's token and streams the answer back,
// filtering tool lists.
func (f *mcpForwarder) forward(w http.ResponseWriter, r *http.Request, cfg *config, body []byte, msgs []rpcMessage, start time.Time) {
	req, err := http.NewRequestWithContext(r.Context(), r.Method, cfg.mcpUpstream.String(), bytes.NewReader(body))
	if err != nil {
		f.fail(w, msgs, start, err.Error())
		return
	}
	copyHeaders(req.Header, r.Header, mcpRequestHeaders)
	req.Header.Set("Authorization", "Bearer "+cfg.token)
	track, err := f.sessions.track(r, msgs, req.URL.String())
	if err != nil {
		f.refuseSession(w, body, msgs, start, err)
		return
	}
	ctx, cancel := track.context(r.Context())
	defer cancel()
	resp, err := f.client.Do(req.WithContext(ctx))
	if problem := track.answered(resp); problem != "" {
		f.logOne(start, "initialize", policy.Error, problem, statusOf(resp))
	}
	if err != nil && agentGone(r, err) {
		f.logAll(start, msgs, policy.Allowed, "the agent closed the connection before the gateway answered", 0)
		return
	}
	if err != nil {
		f.fail(w, msgs, start, "gateway: "+err.Error())
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized {
		f.fail(w, msgs, start, "gateway refused netd's token: "+resp.Status)
		return
	}
	copyHeaders(w.Header(), resp.Header, mcpResponseHeaders)
	allowed := func(tool string) bool { _, ok := cfg.toolAllowed(tool); return ok }
	answered, err := relayMCP(w, resp, allowed, &f.held)
	verdict, reason := policy.Allowed, ""
	switch {
	case err != nil && agentGone(r, err) && answered:
		// The client had its response and closed the event stream, as MCP clients do.
	case err != nil && agentGone(r, err):
		// The request reached the gateway, which may have run the tool: it was allowed.
		reason = "the agent closed the connection before its response"
	case err != nil:
		verdict, reason = policy.Error, err.Error()
	}
	f.logAll(start, msgs, verdict, reason, resp.StatusCode)
}

// agentGone reports whether err comes from the agent closing its connection: MCP clients close a
// POST's event stream as soon as they have their response, often before the gateway ends it.
func agentGone(r *http.Request, err error) bool {
	return r.Context().Err() != nil || errors.Is(err, context.Canceled)
}

// relayMCP writes the gateway's response: event streams event by event, JSON whole (held within
// budget), both with tool lists filtered. answered says whether an event stream delivered a
// JSON-RPC response to the agent (written and flushed) before it ended, for the log: an MCP
// client closes the stream once it has its response, often before the gateway ends it.
func relayMCP(w http.ResponseWriter, resp *http.Response, allowed func(string) bool, budget *byteBudget) (answered bool, err error) {
	media, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch media {
	case "text/event-stream":
		w.WriteHeader(resp.StatusCode)
		rc := http.NewResponseController(w)
		rc.Flush()
		pending := false // the event being written holds a response
		flush := func() error {
			err := rc.Flush()
			answered = answered || pending && err == nil
			pending = false
			return err
		}
		err = copySSE(w, flush, resp.Body, func(data []byte) []byte {
			pending = isResponse(data)
			out, _ := filterTools(data, allowed)
			return out
		})
		return answered, err
	case "application/json":
		want := resp.ContentLength
		if want < 0 || want > maxMCPResponse {
			want = maxMCPResponse + 1
		}
		if !budget.take(want) {
			http.Error(w, "abox: too many bytes in flight through the MCP forwarder", http.StatusServiceUnavailable)
			return false, errors.New("too many bytes in flight: the gateway's response was not read")
		}
		defer budget.give(want)
		n := resp.ContentLength
		if n > maxMCPResponse {
			n = -1 // read up to the bound, and be refused for it
		}
		b, err := readBounded(resp.Body, n, maxMCPResponse)
		if err != nil || len(b) > maxMCPResponse {
			http.Error(w, "abox: gateway response unreadable or too large", http.StatusBadGateway)
			return false, cmp.Or(err, errors.New("gateway response larger than 32 MiB"))
		}
		b, _ = filterTools(b, allowed)
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.WriteHeader(resp.StatusCode)
		_, err = w.Write(b)
		return false, err
	default:
		w.WriteHeader(resp.StatusCode)
		_, err := io.Copy(w, io.LimitReader(resp.Body, maxMCPResponse))
		return false, err
	}
}

// isResponse reports whether data, one JSON-RPC message or a batch, holds a response: an id, a
// result or an error, and no method (a request of the server's to the client has one).
func isResponse(data []byte) bool {
	var one map[string]json.RawMessage
	if json.Unmarshal(data, &one) == nil {
		_, id := one["id"]
		_, method := one["method"]
		_, result := one["result"]
		_, failed := one["error"]
		return id && !method && (result || failed)
	}
	var batch []json.RawMessage
	if json.Unmarshal(data, &batch) != nil {
		return false
	}
	for _, m := range batch {
		if isResponse(m) {
			return true
		}
	}
	return false
}

// fail answers 502 and logs every message as an error.
func (f *mcpForwarder) fail(w http.ResponseWriter, msgs []rpcMessage, start time.Time, reason string) {
	http.Error(w, "abox: MCP gateway unavailable", http.StatusBadGateway)
	f.logAll(start, msgs, policy.Error, reason, http.StatusBadGateway)
}

func (f *mcpForwarder) logAll(start time.Time, msgs []rpcMessage, verdict, reason string, status int) {
	for _, m := range msgs {
		f.logMsg(start, m, verdict, reason, status)
	}
}

func (f *mcpForwarder) logMsg(start time.Time, m rpcMessage, verdict, reason string, status int) {
	rec := policy.MCPRecord{TS: policy.Timestamp(start), Method: m.method, Tool: m.tool,
		Verdict: verdict, Reason: reason, Status: status, DurMS: since(start)}
	if rec.Method == "" {
		rec.Method = "(response)"
	}
	if m.tool != "" {
		rec.Server, _ = f.cfg.get().toolAllowed(m.tool)
	}
	f.log.write(rec)
}

func (f *mcpForwarder) logOne(start time.Time, method, verdict, reason string, status int) {
	f.logMsg(start, rpcMessage{method: method}, verdict, reason, status)
}

func copyHeaders(dst, src http.Header, names []string) {
	for _, n := range names {
		if v := src.Values(n); len(v) > 0 {
			dst[http.CanonicalHeaderKey(n)] = v
		}
	}
}

func writeJSON(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}
