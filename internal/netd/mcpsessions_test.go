package netd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/policy"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessionGateway keeps MCP sessions as docker/mcp-gateway does: the go-sdk stateful streamable
// handler behind the bearer check, with no session timeout. It records the session ids it issued
// and every DELETE, so a test can tell which sessions are still open.
type sessionGateway struct {
	url  string
	port int

	mu          sync.Mutex
	issued      []string
	deletes     []deleteSeen
	initializes int // initialize POSTs that reached it
}

type deleteSeen struct {
	ID, Auth string
	Status   int
}

// startSessionGateway starts a gateway that answers every initialize after initDelay.
func startSessionGateway(t *testing.T, initDelay time.Duration) *sessionGateway {
	t.Helper()
	g := &sessionGateway{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "fake-gateway", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "allowed_tool", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ran"}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{DisableLocalhostProtection: true})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+gatewayToken {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			if r.Method == http.MethodDelete {
				g.record(func() {
					g.deletes = append(g.deletes, deleteSeen{r.Header.Get("Mcp-Session-Id"), r.Header.Get("Authorization"), 401})
				})
			}
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		if strings.Contains(string(body), `"initialize"`) {
			time.Sleep(initDelay)
		}
		rec := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		g.record(func() {
			switch {
			case r.Method == http.MethodDelete:
				g.deletes = append(g.deletes, deleteSeen{r.Header.Get("Mcp-Session-Id"), r.Header.Get("Authorization"), rec.status})
			case strings.Contains(string(body), `"initialize"`):
				g.initializes++
				if id := w.Header().Get("Mcp-Session-Id"); id != "" && r.Header.Get("Mcp-Session-Id") == "" {
					g.issued = append(g.issued, id)
				}
			}
		})
	}))
	t.Cleanup(ts.Close)
	g.url = ts.URL + mcpPath
	g.port = ts.Listener.Addr().(*net.TCPAddr).Port
	return g
}

func (g *sessionGateway) record(f func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f()
}

// open returns the issued sessions no DELETE has closed.
func (g *sessionGateway) open() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var open []string
	for _, id := range g.issued {
		if !slices.ContainsFunc(g.deletes, func(d deleteSeen) bool { return d.ID == id && d.Status == http.StatusNoContent }) {
			open = append(open, id)
		}
	}
	return open
}

func (g *sessionGateway) initializeCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.initializes
}

// deletesOf returns the DELETEs of session id.
func (g *sessionGateway) deletesOf(id string) []deleteSeen {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []deleteSeen
	for _, d := range g.deletes {
		if d.ID == id {
			out = append(out, d)
		}
	}
	return out
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Flush() { http.NewResponseController(s.ResponseWriter).Flush() }

// sessionFixture is a forwarder to a gateway on loopback, reached by name as in startForwarder.
type sessionFixture struct {
	fw  *mcpForwarder
	url string
	log *syncBuffer
}

func startSessionForwarder(t *testing.T, port int) *sessionFixture {
	t.Helper()
	m := projectMCP()
	m.Upstream = fmt.Sprintf("http://abox-gw-test:%d/mcp", port)
	f := &sessionFixture{log: &syncBuffer{}}
	f.fw = newMCPForwarder(testConfig(t, nil, m, gatewayToken, fmt.Sprintf("127.0.0.1:%d", port)), newJSONL(f.log, maxLogBytes))
	ts := httptest.NewServer(f.fw)
	t.Cleanup(ts.Close)
	f.url = ts.URL + mcpPath
	return f
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"agent","version":"1"}}}`

// initialize POSTs an initialize, as an agent that sets its own headers (the forged bearer is
// replaced by netd) and never DELETEs, and returns the status, session id and body.
func initialize(t *testing.T, url string, header http.Header) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(initializeBody))
	req.Header = header.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b)
}

// openSession initializes a session through url and returns its id.
func openSession(t *testing.T, url string) string {
	t.Helper()
	return openSessionWith(t, url, http.Header{"Authorization": {"Bearer agent-guess"}})
}

func openSessionWith(t *testing.T, url string, header http.Header) string {
	t.Helper()
	status, id, body := initialize(t, url, header)
	if status != http.StatusOK || id == "" {
		t.Fatalf("initialize through %s = %d, session %q: %s", url, status, id, body)
	}
	return id
}

// deleteSession DELETEs a session as its MCP client would, and returns the status.
func deleteSession(t *testing.T, url, id string, header http.Header) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	req.Header = header.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	req.Header.Set("Mcp-Session-Id", id)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// closeRecords returns the mcp.jsonl records of netd's own closes.
func closeRecords(t *testing.T, log *syncBuffer) []policy.MCPRecord {
	t.Helper()
	var out []policy.MCPRecord
	for _, r := range logRecords[policy.MCPRecord](t, log) {
		if strings.HasPrefix(r.Reason, reasonClosed) {
			out = append(out, r)
		}
	}
	return out
}

// TestMCPSessionsClosedAtStop: every session the gateway opened through netd and the agent left
// open is DELETEd at stop, once, with netd's token; one the agent DELETEd itself is not sent
// again; and a session netd did not see opened (another project's, whose id the agent presents
// in its own initialize) is never closed by netd.
func TestMCPSessionsClosedAtStop(t *testing.T) {
	g := startSessionGateway(t, 0)
	f := startSessionForwarder(t, g.port)

	// The go-sdk client, left as Claude Code leaves it: no Close. Without the standalone stream it
	// does not react when netd closes its session (it would send a DELETE of its own).
	tr := &mcp.StreamableClientTransport{Endpoint: f.url, HTTPClient: &http.Client{Transport: agentHeaders{http.DefaultTransport}},
		MaxRetries: -1, DisableStandaloneSSE: true}
	sdk, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(context.Background(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sdk.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	raw := openSession(t, f.url)
	closed := openSession(t, f.url)
	if status := deleteSession(t, f.url, closed, nil); status != http.StatusNoContent {
		t.Fatalf("the agent's DELETE through netd = %d, want 204", status)
	}
	auth := http.Header{"Authorization": {"Bearer " + gatewayToken}}
	foreign := openSessionWith(t, g.url, auth) // another project's, opened at the gateway directly
	if status, _, body := initialize(t, f.url, http.Header{"Mcp-Session-Id": {foreign}}); status/100 == 5 {
		t.Fatalf("initialize with a foreign session id = %d %s", status, body)
	}

	f.fw.closeSessions(mcpCloseTimeout)

	for _, id := range []string{sdk.ID(), raw} {
		want := []deleteSeen{{id, "Bearer " + gatewayToken, http.StatusNoContent}}
		if diff := cmp.Diff(want, g.deletesOf(id)); diff != "" {
			t.Errorf("DELETEs of a session the agent left open (-want +got):\n%s", diff)
		}
	}
	if d := g.deletesOf(closed); len(d) != 1 {
		t.Errorf("DELETEs of the session the agent closed = %+v, want only the agent's", d)
	}
	if d := g.deletesOf(foreign); len(d) != 0 {
		t.Errorf("netd DELETEd a session it did not see opened: %+v", d)
	}
	if diff := cmp.Diff([]string{foreign}, g.open()); diff != "" {
		t.Errorf("sessions open at the gateway after the stop (-want +got):\n%s", diff)
	}
	recs := closeRecords(t, f.log)
	if len(recs) != 2 {
		t.Fatalf("netd logged %d closes, want 2:\n%s", len(recs), f.log)
	}
	for _, r := range recs {
		if r.Method != http.MethodDelete || r.Verdict != policy.Allowed || r.Status != http.StatusNoContent {
			t.Errorf("close logged as %+v, want DELETE allowed 204", r)
		}
	}
	if strings.Contains(f.log.String(), gatewayToken) {
		t.Error("the gateway token appears in netd's MCP log")
	}
}

// TestMCPSessionsAgentHangsUp: an agent that hangs up before the gateway answers its initialize
// cannot hide the session from netd: netd still reads the gateway's answer, and closes the
// session at stop.
func TestMCPSessionsAgentHangsUp(t *testing.T) {
	g := startSessionGateway(t, 300*time.Millisecond)
	f := startSessionForwarder(t, g.port)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, f.url, strings.NewReader(initializeBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatal("the initialize was answered before the agent hung up")
	}
	waitFor(t, func() bool { return len(g.open()) == 1 })

	f.fw.closeSessions(mcpCloseTimeout)
	if open := g.open(); len(open) != 0 {
		t.Errorf("sessions open at the gateway after the stop: %q", open)
	}
}

// TestMCPSessionsForgetsGone: a session the gateway says it no longer knows (404) is forgotten,
// so netd does not DELETE it at stop.
func TestMCPSessionsForgetsGone(t *testing.T) {
	g := startSessionGateway(t, 0)
	f := startSessionForwarder(t, g.port)
	id := openSession(t, f.url)
	auth := http.Header{"Authorization": {"Bearer " + gatewayToken}}
	if status := deleteSession(t, g.url, id, auth); status != http.StatusNoContent { // behind netd's back
		t.Fatalf("direct DELETE = %d", status)
	}
	if status := deleteSession(t, f.url, id, nil); status != http.StatusNotFound {
		t.Fatalf("the agent's DELETE of a gone session through netd = %d, want the gateway's 404", status)
	}
	f.fw.closeSessions(mcpCloseTimeout)
	if d := g.deletesOf(id); len(d) != 2 {
		t.Errorf("DELETEs = %+v, want the direct one and the agent's only", d)
	}
	if recs := closeRecords(t, f.log); len(recs) != 0 {
		t.Errorf("netd closed a session the gateway had forgotten: %+v", recs)
	}
}

// TestMCPSessionsBound: past the bound an initialize is refused with a JSON-RPC error and a log
// record, without reaching the gateway; closing a session makes room again; and every session
// that was opened is closed at stop.
func TestMCPSessionsBound(t *testing.T) {
	g := startSessionGateway(t, 0)
	f := startSessionForwarder(t, g.port)
	f.fw.sessions.limit = 2
	first := openSession(t, f.url)
	openSession(t, f.url)

	status, id, body := initialize(t, f.url, nil)
	if status != http.StatusOK || id != "" || !strings.Contains(body, "too many MCP sessions") || !strings.Contains(body, `"error"`) {
		t.Errorf("initialize past the bound = %d, session %q: %s; want a JSON-RPC error and no session", status, id, body)
	}
	if n := g.initializeCount(); n != 2 {
		t.Errorf("the gateway saw %d initializes, want 2: the refused one must not reach it", n)
	}
	refused := slices.ContainsFunc(logRecords[policy.MCPRecord](t, f.log), func(r policy.MCPRecord) bool {
		return r.Method == "initialize" && r.Verdict == policy.Denied && r.Reason == reasonSessionLimit
	})
	if !refused {
		t.Errorf("no denied initialize in the log:\n%s", f.log)
	}

	if status := deleteSession(t, f.url, first, nil); status != http.StatusNoContent {
		t.Fatalf("the agent's DELETE = %d", status)
	}
	openSession(t, f.url)
	f.fw.closeSessions(mcpCloseTimeout)
	if open := g.open(); len(open) != 0 {
		t.Errorf("sessions open at the gateway after the stop: %q", open)
	}
	if recs := closeRecords(t, f.log); len(recs) != 2 {
		t.Errorf("netd logged %d closes, want 2", len(recs))
	}
	if status, _, body := initialize(t, f.url, nil); !strings.Contains(body, reasonStopping) {
		t.Errorf("initialize after the stop = %d %s, want refused: netd is stopping", status, body)
	}
}

// TestMCPSessionsSlowGateway: a gateway that never answers DELETE cannot hold the stop past its
// deadline, and every close is sent at once, not one after another.
func TestMCPSessionsSlowGateway(t *testing.T) {
	var mu sync.Mutex
	n, deletes := 0, 0
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if r.Method == http.MethodDelete {
			deletes++
			mu.Unlock()
			<-r.Context().Done()
			return
		}
		n++
		id := fmt.Sprintf("session-%d", n)
		mu.Unlock()
		w.Header().Set("Mcp-Session-Id", id)
		writeJSON(w, http.StatusOK, []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	}))
	defer ts.Close()
	f := startSessionForwarder(t, ts.Listener.Addr().(*net.TCPAddr).Port)
	const sessions = 5
	for range sessions {
		openSession(t, f.url)
	}

	const timeout = 300 * time.Millisecond
	start := time.Now()
	f.fw.closeSessions(timeout)
	if took := time.Since(start); took > timeout+500*time.Millisecond {
		t.Errorf("closing took %v with a %v deadline", took, timeout)
	}
	mu.Lock()
	defer mu.Unlock()
	if deletes != sessions {
		t.Errorf("%d DELETEs reached the gateway before the deadline, want all %d, sent together", deletes, sessions)
	}
	recs := closeRecords(t, f.log)
	if len(recs) != sessions {
		t.Fatalf("netd logged %d closes, want %d:\n%s", len(recs), sessions, f.log)
	}
	for _, r := range recs {
		if r.Verdict != policy.Error {
			t.Errorf("an unanswered close logged as %+v, want an error", r)
		}
	}
}

// TestMCPSessionsRefusesBadIDs: the gateway's answer is the only source of a session id, and one
// the MCP specification does not allow is not remembered, and is logged.
func TestMCPSessionsRefusesBadIDs(t *testing.T) {
	for _, id := range []string{"has space", strings.Repeat("a", maxSessionID+1), "tab\tin"} {
		if validSessionID(id) {
			t.Errorf("validSessionID(%q) = true", id)
		}
	}
	var s mcpSessions
	req := httptest.NewRequest(http.MethodPost, mcpPath, nil)
	track, err := s.track(req, []rpcMessage{{method: "initialize"}}, "http://gw/mcp")
	if err != nil {
		t.Fatal(err)
	}
	resp := &http.Response{StatusCode: 200, Header: http.Header{"Mcp-Session-Id": {"bad id"}}}
	if problem := track.answered(resp); problem == "" {
		t.Error("an unusable session id was accepted silently")
	}
	if open := s.drain(context.Background(), time.Minute); len(open) != 0 {
		t.Errorf("remembered %+v", open)
	}
}

// TestMCPSessionsInitializeInFlight: drain waits for an initialize the gateway has not answered
// yet, so the session it opens is closed too.
func TestMCPSessionsInitializeInFlight(t *testing.T) {
	var s mcpSessions
	req := httptest.NewRequest(http.MethodPost, mcpPath, nil)
	track, err := s.track(req, []rpcMessage{{method: "initialize"}}, "http://gw/mcp")
	if err != nil {
		t.Fatal(err)
	}
	drained := make(chan []mcpSession)
	go func() { drained <- s.drain(context.Background(), time.Minute) }()
	time.Sleep(50 * time.Millisecond)
	track.answered(&http.Response{StatusCode: 200, Header: http.Header{"Mcp-Session-Id": {"late"}}})
	select {
	case open := <-drained:
		if diff := cmp.Diff([]mcpSession{{"late", "http://gw/mcp"}}, open, cmp.AllowUnexported(mcpSession{})); diff != "" {
			t.Errorf("drained (-want +got):\n%s", diff)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("drain did not return once the initialize was answered")
	}
}

// TestChildControlAfterStop: after the supervisor's stop the child still reads the control
// channel, so the dials of its closing DELETEs get their set requests answered.
func TestChildControlAfterStop(t *testing.T) {
	mine, theirs := net.Pipe()
	defer theirs.Close()
	c := &child{ctl: newCtlConn(mine)}
	c.sets = newCtlSets(c.ctl)
	stop := make(chan struct{})
	go c.control(stop)
	sup := newCtlConn(theirs)
	if err := sup.send(message{Op: opStop}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stop:
	case <-time.After(5 * time.Second):
		t.Fatal("the stop was not signalled")
	}
	added := make(chan error, 1)
	go func() {
		added <- c.sets.addElements(context.Background(), setRequest{Set: policy.SetNetd, Ports: []int{8811}, Timeout: 30})
	}()
	m, err := sup.recv()
	if err != nil || m.Op != opAdd {
		t.Fatalf("after the stop the child sent %+v, %v; want its set request", m, err)
	}
	sup.send(message{Op: opResult, ID: m.ID})
	select {
	case err := <-added:
		if err != nil {
			t.Errorf("set request after the stop: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the set request after the stop was never answered: the child stopped reading")
	}
}

// TestShutdownFitsDockerStop: abox gives netd 5 s between `docker stop`'s SIGTERM and its kill;
// stopping the child (which closes the sessions) and writing the counters must fit in it.
func TestShutdownFitsDockerStop(t *testing.T) {
	if mcpCloseTimeout >= stopTimeout {
		t.Errorf("the child gets %v to stop but closing the sessions may take %v", stopTimeout, mcpCloseTimeout)
	}
	if total := stopTimeout + escalateTimeout + countersTimeout; total >= 5*time.Second {
		t.Errorf("the shutdown may take %v, more than docker stop's 5 s", total)
	}
}

// startMCPSupervisor runs a whole netd, as startSupervisor does, with the gateway at upstream
// and its token.
func startMCPSupervisor(t *testing.T, upstream string) *supFixture {
	t.Helper()
	nft := okNFT(t)
	f := &supFixture{dir: t.TempDir(), logDir: filepath.Join(t.TempDir(), "logs"), addrs: freeAddrs(t), nft: nft,
		sigs: make(chan os.Signal, 1), stdout: &syncBuffer{}, result: make(chan error, 1)}
	m := projectMCP()
	m.Upstream = upstream
	p := policy.Netd{Version: policy.Version, Project: "p", MCP: m}
	writeFile(t, filepath.Join(f.dir, policy.File), p.Marshal())
	writeFile(t, filepath.Join(f.dir, policy.RulesFile), policy.Ruleset(policy.NetdUID))
	writeFile(t, filepath.Join(f.dir, "token"), []byte(gatewayToken+"\n"))
	f.child = &inProcChild{addrs: f.addrs, upstream: startUpstream(t).addr}
	st := selfTest{resolvers: []string{f.addrs.dns}, addrs: f.addrs, nft: nft, expected: policy.ExpectedRuleset(policy.NetdUID)}
	o := options{dir: f.dir, logDir: f.logDir, tokenFile: filepath.Join(f.dir, "token"), upstreamDNS: "unused", inProcChild: true}
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	o.gateway = netip.MustParseAddrPort(u.Host) // the test gateway, on loopback: as abox would give its address
	s := newSupervisor(o, nft, f.child, st, f.stdout)
	f.serve(t, s)
	return f
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestSupervisorStopClosesSessions drives the real shutdown: SIGTERM makes the supervisor stop
// the child, which closes the session the agent left open before it exits; the counters follow.
// A gateway that never answers the DELETE cannot hold netd past its shutdown budget.
func TestSupervisorStopClosesSessions(t *testing.T) {
	t.Run("gateway answers", func(t *testing.T) {
		g := startSessionGateway(t, 0)
		f := startMCPSupervisor(t, g.url)
		f.waitEvent(t, policy.EventReady, 1)
		id := openSession(t, "http://"+f.addrs.mcp+mcpPath)
		f.sigs <- syscall.SIGTERM
		if err := <-f.result; err != nil {
			t.Fatalf("run after SIGTERM = %v", err)
		}
		want := []deleteSeen{{id, "Bearer " + gatewayToken, http.StatusNoContent}}
		if diff := cmp.Diff(want, g.deletesOf(id)); diff != "" {
			t.Errorf("DELETEs of the session at netd's stop (-want +got):\n%s", diff)
		}
		checkStopLogs(t, f, policy.Allowed)
	})
	t.Run("gateway hangs", func(t *testing.T) {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodDelete {
				<-r.Context().Done()
				return
			}
			w.Header().Set("Mcp-Session-Id", "hanging-session")
			writeJSON(w, http.StatusOK, []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
		}))
		defer ts.Close()
		f := startMCPSupervisor(t, ts.URL+mcpPath)
		f.waitEvent(t, policy.EventReady, 1)
		openSession(t, "http://"+f.addrs.mcp+mcpPath)
		start := time.Now()
		f.sigs <- syscall.SIGTERM
		if err := <-f.result; err != nil {
			t.Fatalf("run after SIGTERM = %v", err)
		}
		if took := time.Since(start); took > mcpCloseTimeout+time.Second {
			t.Errorf("netd took %v to stop with a gateway that never answers", took)
		}
		checkStopLogs(t, f, policy.Error)
	})
}

// checkStopLogs expects one close with the verdict in mcp.jsonl, the counters, and no error event.
func checkStopLogs(t *testing.T, f *supFixture, verdict string) {
	t.Helper()
	var closes []policy.MCPRecord
	for _, line := range strings.Split(strings.TrimSpace(string(readFile(t, filepath.Join(f.logDir, policy.MCPLog)))), "\n") {
		var r policy.MCPRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("mcp.jsonl line %q: %v", line, err)
		}
		if strings.HasPrefix(r.Reason, reasonClosed) {
			closes = append(closes, r)
		}
	}
	if len(closes) != 1 || closes[0].Verdict != verdict || closes[0].Method != http.MethodDelete {
		t.Errorf("closes in mcp.jsonl = %+v, want one DELETE %s", closes, verdict)
	}
	if _, err := os.Stat(filepath.Join(f.logDir, policy.CountersLog)); err != nil {
		t.Errorf("no counters after the stop: %v", err)
	}
	if strings.Contains(f.stdout.String(), `"event":"error"`) {
		t.Errorf("error events at the stop:\n%s", f.stdout)
	}
}
