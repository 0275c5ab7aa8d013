package netd

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/policy"
)

const (
	testAPIKey = "sk-ant-api03-the-real-key-only-netd-holds"
	testOAuth  = "sk-ant-oat01-the-real-oauth-token-only-netd-holds"
)

// seenRequest is what the stand-in upstream received.
type seenRequest struct {
	Method, Path, Query, Host string
	Header                    http.Header
	Body                      string
}

// modelUpstreamStub is a TLS server standing in for the Messages API. It records every request
// and answers with the response its handler writes.
type modelUpstreamStub struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen []seenRequest
}

func newModelUpstream(t *testing.T, h http.HandlerFunc) *modelUpstreamStub {
	t.Helper()
	s := &modelUpstreamStub{}
	s.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.seen = append(s.seen, seenRequest{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Host: r.Host, Header: r.Header.Clone(), Body: string(body)})
		s.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *modelUpstreamStub) requests() []seenRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seenRequest(nil), s.seen...)
}

// trusting is a TLS configuration that trusts only the stub's certificate.
func (s *modelUpstreamStub) trusting() *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(s.srv.Certificate())
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

// modelTestForwarder serves a model forwarder for upstream (a URL) with credential, over tc, and
// returns its base URL and its log.
func modelTestForwarder(t *testing.T, upstream, credential string, tc *tls.Config) (string, *syncBuffer) {
	t.Helper()
	base, log, _ := modelTestForwarderLimit(t, upstream, credential, tc, policy.DefaultLogLimit)
	return base, log
}

// modelTestForwarderLimit is modelTestForwarder with the model log capped at limit bytes; it
// returns the forwarder too.
func modelTestForwarderLimit(t *testing.T, upstream, credential string, tc *tls.Config, limit int64) (string, *syncBuffer, *modelForwarder) {
	t.Helper()
	p := policy.Netd{Version: policy.Version, Project: "test"}
	if upstream != "" {
		p.Model = &policy.ModelAPI{Upstream: upstream}
	}
	cfg, err := newConfig(p.Marshal(), "", credential, "")
	if err != nil {
		t.Fatal(err)
	}
	var cur current
	cur.set(cfg)
	log := &syncBuffer{}
	dial := &upstreamDialer{timeout: 5 * time.Second} // loopback literals: no resolver, no set
	f := newModelForwarder(&cur, dial.dial, tc, newJSONL(log, limit))
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return srv.URL, log, f
}

// modelRecords parses the forwarder's log: the final record of each request, without the
// in-flight records written before forwarded ones left (modelLines has those too).
func modelRecords(t *testing.T, log *syncBuffer) []policy.ModelRecord {
	t.Helper()
	var out []policy.ModelRecord
	for _, r := range modelLines(t, log) {
		if !r.InFlight {
			out = append(out, r)
		}
	}
	return out
}

// modelLines parses every line of the forwarder's log.
func modelLines(t *testing.T, log *syncBuffer) []policy.ModelRecord {
	t.Helper()
	var out []policy.ModelRecord
	for _, line := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		if line == "" {
			continue
		}
		var r policy.ModelRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("model log line %q: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

// agentRequest sends what Claude Code sends: its placeholder in x-api-key, and here also a
// bearer token and a cookie of its own.
func agentRequest(t *testing.T, method, url, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("x-api-key", policy.CredentialPlaceholder)
	req.Header.Set("Authorization", "Bearer agent-chosen")
	req.Header.Set("Cookie", "session=agent")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	req.Header.Set("Anthropic-Beta", "claude-code-20250219")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Forwarded-For", "10.0.0.1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

const streamedReply = "event: message_start\n" +
	`data: {"type":"message_start","message":{"id":"msg_1","model":"claude-test-1","usage":{"input_tokens":123,"output_tokens":1,"cache_read_input_tokens":40,"cache_creation_input_tokens":7}}}` + "\n\n" +
	"event: content_block_delta\n" +
	`data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}` + "\n\n" +
	"event: message_delta\n" +
	`data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":45}}` + "\n\n" +
	"event: message_stop\n" +
	`data: {"type":"message_stop"}` + "\n\n"

// TestModelForwarderInjectsTheAPIKey: the upstream sees the real key in x-api-key and none of
// the agent's credential, cookie or forwarding headers; the path keeps the upstream's prefix
// and the query; the stream comes back whole; the log has the run's tokens and model.
func TestModelForwarderInjectsTheAPIKey(t *testing.T) {
	up := newModelUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Request-Id", "req_1")
		w.Header().Set("Set-Cookie", "upstream=1")
		io.WriteString(w, streamedReply)
	})
	base, log := modelTestForwarder(t, up.srv.URL+"/anthropic", testAPIKey, up.trusting())
	resp := agentRequest(t, "POST", base+"/v1/messages?beta=true", `{"model":"claude-test-1","stream":true,"max_tokens":5}`)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != streamedReply {
		t.Fatalf("status %d, body %q; want 200 and the upstream's stream", resp.StatusCode, body)
	}
	if resp.Header.Get("Request-Id") != "req_1" || resp.Header.Get("Set-Cookie") != "" {
		t.Errorf("response headers %v: want Request-Id passed and Set-Cookie dropped", resp.Header)
	}
	seen := up.requests()
	if len(seen) != 1 {
		t.Fatalf("upstream saw %d requests, want 1", len(seen))
	}
	r := seen[0]
	if r.Path != "/anthropic/v1/messages" || r.Query != "beta=true" {
		t.Errorf("upstream path %q query %q, want /anthropic/v1/messages and beta=true", r.Path, r.Query)
	}
	if got := r.Header.Values("X-Api-Key"); len(got) != 1 || got[0] != testAPIKey {
		t.Errorf("upstream x-api-key %q, want only the real key", got)
	}
	for _, h := range []string{"Authorization", "Cookie", "X-Forwarded-For"} {
		if v := r.Header.Get(h); v != "" {
			t.Errorf("upstream received the agent's %s: %q", h, v)
		}
	}
	if r.Header.Get("Anthropic-Version") != "2023-06-01" || r.Header.Get("Anthropic-Beta") != "claude-code-20250219" {
		t.Errorf("the API's own headers were not passed on: %v", r.Header)
	}
	if strings.Contains(fmt.Sprint(r.Header), policy.CredentialPlaceholder) {
		t.Errorf("the placeholder reached the upstream: %v", r.Header)
	}
	recs := modelRecords(t, log)
	want := policy.ModelRecord{Method: "POST", Path: "/v1/messages", Verdict: policy.Allowed, Status: 200, Model: "claude-test-1",
		Stream: true, InputTokens: 123, OutputTokens: 45, CacheReadTokens: 40, CacheCreationTokens: 7}
	if len(recs) != 1 {
		t.Fatalf("log %q: want one record", log.String())
	}
	got := recs[0]
	got.TS, got.ID, got.DurMS, got.BytesUp, got.BytesDown = "", "", 0, 0, 0
	if got != want {
		t.Errorf("record %+v\nwant   %+v", got, want)
	}
	if recs[0].BytesDown != int64(len(streamedReply)) {
		t.Errorf("bytes down %d, want %d", recs[0].BytesDown, len(streamedReply))
	}
	if strings.Contains(log.String(), testAPIKey) {
		t.Error("the log holds the key")
	}
}

// TestModelForwarderInjectsTheOAuthToken: a setup-token credential goes as a bearer token with
// the OAuth beta added to the agent's betas, and no x-api-key at all.
func TestModelForwarderInjectsTheOAuthToken(t *testing.T) {
	up := newModelUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_2","model":"claude-test-2","usage":{"input_tokens":9,"output_tokens":3}}`)
	})
	base, log := modelTestForwarder(t, up.srv.URL, testOAuth, up.trusting())
	resp := agentRequest(t, "POST", base+"/v1/messages", `{"model":"claude-test-2","max_tokens":5}`)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	seen := up.requests()
	if resp.StatusCode != 200 || len(seen) != 1 {
		t.Fatalf("status %d, upstream requests %d", resp.StatusCode, len(seen))
	}
	h := seen[0].Header
	if got := h.Values("Authorization"); len(got) != 1 || got[0] != "Bearer "+testOAuth {
		t.Errorf("Authorization %q, want the OAuth token as the only bearer", got)
	}
	if v := h.Get("X-Api-Key"); v != "" {
		t.Errorf("x-api-key %q sent with an OAuth token", v)
	}
	if !hasBeta(h.Values("Anthropic-Beta"), policy.OAuthBeta) || !hasBeta(h.Values("Anthropic-Beta"), "claude-code-20250219") {
		t.Errorf("anthropic-beta %q: want the agent's beta and %s", h.Values("Anthropic-Beta"), policy.OAuthBeta)
	}
	recs := modelRecords(t, log)
	if len(recs) != 1 || recs[0].InputTokens != 9 || recs[0].OutputTokens != 3 || recs[0].Model != "claude-test-2" || recs[0].Stream {
		t.Errorf("records %+v: want one with 9 in, 3 out, claude-test-2, not streamed", recs)
	}
}

// TestModelForwarderRefuses: paths outside the API, other methods, dot segments and escaped
// slashes never reach the upstream, and each refusal is logged as denied.
func TestModelForwarderRefuses(t *testing.T) {
	up := newModelUpstream(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "{}") })
	base, log := modelTestForwarder(t, up.srv.URL, testAPIKey, up.trusting())
	cases := []struct{ method, path string }{
		{"POST", "/v1/complete"},
		{"GET", "/api/oauth/profile"},
		{"GET", "/v1/messages"},
		{"PUT", "/v1/messages"},
		{"DELETE", "/v1/models/x"},
		{"POST", "/v1/messages/batches"},
		{"GET", "/v1/models/a/b"},
		{"POST", "/v1/messages/%2e%2e/files"},
		{"POST", "/v1%2Fmessages"},
		{"POST", "//v1/messages"},
	}
	for _, c := range cases {
		resp := agentRequest(t, c.method, base+c.path, "{}")
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s %s: status %d, want 403", c.method, c.path, resp.StatusCode)
		}
	}
	if seen := up.requests(); len(seen) != 0 {
		t.Errorf("the upstream received %d refused requests: %+v", len(seen), seen)
	}
	recs := modelRecords(t, log)
	if len(recs) != len(cases) {
		t.Fatalf("%d records for %d refusals", len(recs), len(cases))
	}
	for _, r := range recs {
		if r.Verdict != policy.Denied || r.Status != http.StatusForbidden {
			t.Errorf("record %+v: want denied, 403", r)
		}
	}
	// And what is allowed passes: GET /v1/models and a model's own entry.
	for _, p := range []string{"/v1/models", "/v1/models/claude-test-1", "/v1/messages/count_tokens"} {
		m, body := "GET", ""
		if p == "/v1/messages/count_tokens" {
			m, body = "POST", "{}" // a POST's body must be JSON (TestModelForwarderRefusesServerTools)
		}
		resp := agentRequest(t, m, base+p, body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s %s: status %d, want 200", m, p, resp.StatusCode)
		}
	}
}

// TestModelForwarderCannotBeSteered: an absolute-form request line or a Host header naming
// another server still goes to the policy's upstream, and only there.
func TestModelForwarderCannotBeSteered(t *testing.T) {
	other := newModelUpstream(t, func(w http.ResponseWriter, r *http.Request) {})
	up := newModelUpstream(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "{}") })
	base, _ := modelTestForwarder(t, up.srv.URL, testAPIKey, up.trusting())
	addr := strings.TrimPrefix(base, "http://")
	otherHost := strings.TrimPrefix(other.srv.URL, "https://")
	for _, req := range []string{
		"POST " + other.srv.URL + "/v1/messages HTTP/1.1\r\nHost: " + otherHost + "\r\nContent-Length: 2\r\nx-api-key: p\r\n\r\n{}",
		"POST /v1/messages HTTP/1.1\r\nHost: " + otherHost + "\r\nContent-Length: 2\r\n\r\n{}",
	} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, req)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		c.Close()
	}
	if n := len(other.requests()); n != 0 {
		t.Errorf("the other server received %d requests", n)
	}
	seen := up.requests()
	if len(seen) != 2 {
		t.Fatalf("the upstream received %d requests, want 2", len(seen))
	}
	for _, r := range seen {
		if r.Host != strings.TrimPrefix(up.srv.URL, "https://") {
			t.Errorf("upstream request with Host %q", r.Host)
		}
	}
}

// TestModelForwarderVerifiesTLS: an upstream whose certificate the forwarder does not trust gets
// no request (so no credential), and the agent a 502 with the reason.
func TestModelForwarderVerifiesTLS(t *testing.T) {
	up := newModelUpstream(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "{}") })
	base, log := modelTestForwarder(t, up.srv.URL, testAPIKey, &tls.Config{RootCAs: x509.NewCertPool(), MinVersion: tls.VersionTLS12})
	resp := agentRequest(t, "POST", base+"/v1/messages", "{}")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway || !bytes.Contains(body, []byte("certificate")) {
		t.Errorf("status %d body %s: want 502 naming the certificate", resp.StatusCode, body)
	}
	if n := len(up.requests()); n != 0 {
		t.Errorf("an unverified upstream received %d requests", n)
	}
	if recs := modelRecords(t, log); len(recs) != 1 || recs[0].Verdict != policy.Error {
		t.Errorf("records %+v: want one error", recs)
	}
}

// TestModelForwarderOff: without the policy's model section, or without a credential, nothing is
// forwarded and the agent learns why.
func TestModelForwarderOff(t *testing.T) {
	up := newModelUpstream(t, func(w http.ResponseWriter, r *http.Request) {})
	for _, c := range []struct{ upstream, cred, reason string }{
		{"", testAPIKey, "injected-credential mode is off"},
		{up.srv.URL, "", "netd holds no credential"},
	} {
		base, log := modelTestForwarder(t, c.upstream, c.cred, up.trusting())
		resp := agentRequest(t, "POST", base+"/v1/messages", "{}")
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), c.reason) {
			t.Errorf("status %d body %s: want 503 and %q", resp.StatusCode, body, c.reason)
		}
		if recs := modelRecords(t, log); len(recs) != 1 || recs[0].Reason != c.reason {
			t.Errorf("records %+v", recs)
		}
	}
	if n := len(up.requests()); n != 0 {
		t.Errorf("the upstream received %d requests", n)
	}
}

// TestModelForwarderStreamsUnbuffered: the agent reads the first event while the upstream still
// holds the rest back.
func TestModelForwarderStreamsUnbuffered(t *testing.T) {
	release := make(chan struct{})
	up := newModelUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: ping\ndata: {\"type\":\"ping\"}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-time.After(10 * time.Second):
		}
		io.WriteString(w, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	})
	base, _ := modelTestForwarder(t, up.srv.URL, testAPIKey, up.trusting())
	got := make(chan string, 1)
	go func() {
		req, _ := http.NewRequest("POST", base+"/v1/messages", strings.NewReader(`{"stream":true}`))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			got <- err.Error()
			return
		}
		defer resp.Body.Close()
		line, _ := bufio.NewReader(resp.Body).ReadString('\n')
		got <- line
	}()
	select {
	case line := <-got:
		if line != "event: ping\n" {
			t.Errorf("first line %q", line)
		}
	case <-time.After(5 * time.Second):
		t.Error("the first event did not arrive while the upstream held the rest: the forwarder buffers")
	}
	close(release)
}

// TestUsageReaderLongLine: a data line over the bound is forwarded and skipped, and the counts of
// the lines around it are still read.
func TestUsageReaderLongLine(t *testing.T) {
	u := newUsageReader("text/event-stream; charset=utf-8")
	io.WriteString(u, `data: {"type":"message_start","message":{"model":"m","usage":{"input_tokens":5}}}`+"\n")
	io.WriteString(u, "data: "+strings.Repeat("x", maxUsageLine+10)+"\n")
	io.WriteString(u, `data: {"type":"message_delta","usage":{"output_tokens":8}}`)
	u.finish()
	if u.model != "m" || u.usage.InputTokens != 5 || u.usage.OutputTokens != 8 {
		t.Errorf("model %q usage %+v", u.model, u.usage)
	}
}

// TestModelTLSRoots: the forwarder trusts a certificate file in its CA directory, and refuses to
// start on a file that holds none.
func TestModelTLSRoots(t *testing.T) {
	up := newModelUpstream(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "{}") })
	dir := t.TempDir()
	pemData := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: up.srv.Certificate().Raw})
	if err := os.WriteFile(filepath.Join(dir, "00-test.crt"), pemData, 0o644); err != nil {
		t.Fatal(err)
	}
	tc, err := modelTLS(dir)
	if err != nil {
		t.Fatal(err)
	}
	base, _ := modelTestForwarder(t, up.srv.URL, testAPIKey, tc)
	resp := agentRequest(t, "POST", base+"/v1/messages", "{}")
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("status %d through a CA from the directory, want 200", resp.StatusCode)
	}
	if _, err := modelTLS(filepath.Join(dir, "missing")); err != nil {
		t.Errorf("a missing CA directory: %v, want the system roots alone", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "01-junk.crt"), []byte("not a certificate"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := modelTLS(dir); err == nil || !strings.Contains(err.Error(), "01-junk.crt") {
		t.Errorf("a junk CA file: %v, want an error naming it", err)
	}
}

// TestModelForwarderBoundsHeldBodies: request bodies netd holds, all requests together, stay
// within maxModelBuffered. Two requests announcing 32 MiB each and sending them slowly take the
// whole budget; a third is answered 429 at once, before a byte of it is read, and so is a chunked
// one (it holds a place for the largest body); a body announced over 32 MiB is refused 413
// unread. Once the slow ones end, the budget is back. Without the budget netd reads them all,
// and 32 such requests exceed netd's 256 MiB.
func TestModelForwarderBoundsHeldBodies(t *testing.T) {
	up := newModelUpstream(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "{}") })
	base, log, f := modelTestForwarderLimit(t, up.srv.URL, testAPIKey, up.trusting(), policy.DefaultLogLimit)
	addr := strings.TrimPrefix(base, "http://")
	var slow []net.Conn
	for i := 0; i < maxModelBuffered/maxModelRequest; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{\"model\":", maxModelRequest)
		slow = append(slow, c)
	}
	client := &http.Client{Timeout: 3 * time.Second}
	post := func(body io.Reader, length int64) (int, error) {
		req, _ := http.NewRequest("POST", base+"/v1/messages", body)
		req.ContentLength = length
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	// The slow requests are in once the forwarder counts their bodies.
	held := func() int64 {
		f.bodies.mu.Lock()
		defer f.bodies.mu.Unlock()
		return f.bodies.held
	}
	deadline := time.Now().Add(10 * time.Second)
	for held() < int64(len(slow))*maxModelRequest {
		if time.Now().After(deadline) {
			t.Fatalf("the forwarder holds %d bytes for the %d slow requests", held(), len(slow))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if code, err := post(strings.NewReader(`{"model":"m"}`), int64(len(`{"model":"m"}`))); err != nil || code != http.StatusTooManyRequests {
		t.Fatalf("a small request beside %d slow 32 MiB ones: status %d, %v; want 429", len(slow), code, err)
	}
	if code, err := post(io.MultiReader(strings.NewReader("{}")), -1); err != nil || code != http.StatusTooManyRequests {
		t.Errorf("a chunked request beside the slow ones: status %d, %v; want 429", code, err)
	}
	big, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer big.Close()
	fmt.Fprintf(big, "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n{", maxModelRequest+1)
	big.SetReadDeadline(time.Now().Add(3 * time.Second))
	if resp, err := http.ReadResponse(bufio.NewReader(big), nil); err != nil || resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a request announcing more than 32 MiB: %v, %v; want 413 unread", resp, err)
	}
	for _, c := range slow {
		c.Close()
	}
	deadline = time.Now().Add(10 * time.Second)
	for {
		code, err := post(strings.NewReader(`{"model":"m"}`), int64(len(`{"model":"m"}`)))
		if err == nil && code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the slow requests ended: status %d, %v; want 200", code, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var refused int
	for _, r := range modelRecords(t, log) {
		if r.Status == http.StatusTooManyRequests && r.Verdict == policy.Denied && r.Reason == "too many request bytes in flight" {
			refused++
		}
	}
	if refused < 2 {
		t.Errorf("%d refusals logged for the bytes in flight, want the small and the chunked one", refused)
	}
}

// TestModelForwarderNeverSpendsUnlogged: the agent fills the model log to its cap with refused
// requests (cheap: nothing reaches the upstream), with 200-byte paths, and then asks for a real
// completion. Either its usage is in the log or the upstream never saw it: netd keeps room in the
// cap for every request it forwards, and refuses to forward when there is none. Without that the
// completion is forwarded, spent, and its record dropped by the full log.
func TestModelForwarderNeverSpendsUnlogged(t *testing.T) {
	up := newModelUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, streamedReply)
	})
	base, log, _ := modelTestForwarderLimit(t, up.srv.URL, testAPIKey, up.trusting(), policy.MinLogLimit)
	long := "/v1/" + strings.Repeat("x", 250)
	for i := 0; len(log.String()) < policy.MinLogLimit-1024 && i < 10000; i++ {
		resp, err := http.Post(base+long, "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if !strings.Contains(log.String(), `"truncated":true`) && len(log.String()) < policy.MinLogLimit-1024 {
		t.Fatalf("the flood left the log at %d bytes: the test proves nothing", len(log.String()))
	}
	for i := 0; i < 3; i++ {
		resp := agentRequest(t, "POST", base+"/v1/messages", `{"model":"claude-test-1","stream":true}`)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("a completion after the log filled: status %d, want 503", resp.StatusCode)
		}
	}
	forwarded := len(up.requests())
	logged := 0
	for _, r := range modelRecords(t, log) {
		if r.Verdict == policy.Allowed && r.InputTokens == 123 {
			logged++
		}
	}
	if forwarded != logged {
		t.Errorf("the upstream served %d completions after the flood, the log holds %d of them", forwarded, logged)
	}
}

// TestModelForwarderMarksCutResponses: the agent reads a streamed completion up to its first
// delta and hangs up before the closing message_delta, which alone carries the output tokens.
// The upstream was spending meanwhile; the record says the response was cut, so the run's
// accounting can tell its output count is a floor, not the spend. Without the mark the record
// looks like a complete answer of 1 output token.
func TestModelForwarderMarksCutResponses(t *testing.T) {
	release := make(chan struct{})
	up := newModelUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		head, _, _ := strings.Cut(streamedReply, "event: message_delta")
		io.WriteString(w, head)
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			// netd gave up on the request once the agent hung up: the closing message_delta
			// never comes. (Written anyway, netd could read it before it noticed the hang-up,
			// and would then rightly count the whole response.)
			return
		}
		io.WriteString(w, "event: message_delta"+strings.SplitN(streamedReply, "event: message_delta", 2)[1])
	})
	defer close(release)
	base, log := modelTestForwarder(t, up.srv.URL, testAPIKey, up.trusting())
	resp := agentRequest(t, "POST", base+"/v1/messages", `{"model":"claude-test-1","stream":true}`)
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(line, "content_block_delta") && strings.HasPrefix(line, "data:") {
			break
		}
	}
	resp.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for len(modelRecords(t, log)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no record of the cut request")
		}
		time.Sleep(10 * time.Millisecond)
	}
	r := modelRecords(t, log)[0]
	if !strings.HasPrefix(r.Reason, "response cut") || r.InputTokens != 123 {
		t.Errorf("record %+v: want the input tokens and the reason \"response cut…\"", r)
	}
}

// TestModelForwarderMarksStreamsEndedEarly: a stream the upstream ends cleanly before its
// message_stop (the agent's side went first, or the upstream stopped) is recorded as cut too.
func TestModelForwarderMarksStreamsEndedEarly(t *testing.T) {
	up := newModelUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		head, _, _ := strings.Cut(streamedReply, "event: message_delta")
		io.WriteString(w, head)
	})
	base, log := modelTestForwarder(t, up.srv.URL, testAPIKey, up.trusting())
	resp := agentRequest(t, "POST", base+"/v1/messages", `{"model":"claude-test-1","stream":true}`)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for len(modelRecords(t, log)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no record of the request")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if r := modelRecords(t, log)[0]; !strings.HasPrefix(r.Reason, "response cut") || r.InputTokens != 123 {
		t.Errorf("record %+v: want the input tokens and the reason \"response cut…\"", r)
	}
}
