package netd

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aboxhq/abox/internal/policy"
)

// modelForwarder is the agent's model API in injected-credential mode
// (http://127.0.0.1:<ModelPort>, the agent's ANTHROPIC_BASE_URL). The agent holds only
// [policy.CredentialPlaceholder]; the forwarder drops every credential header a request carries,
// adds the real one, and sends the request over verified TLS to the policy's upstream and to
// nothing else: the upstream comes from the policy, never from the request, and only the
// Messages API's paths are forwarded. So the agent can spend the credential while it runs but
// never holds it, and no other host ever receives it. Responses stream back unbuffered; their
// usage is logged per request ([policy.ModelRecord]) for the run's accounting, in two records:
// one written before the request's first byte leaves netd, so that no spending depends on netd
// living through the response, and the final one. A request that left is recorded as spent
// whatever happens next; only one that never left (the upstream unreachable) is not.
type modelForwarder struct {
	cfg    *current
	client *http.Client
	log    *jsonl
	now    func() time.Time
	slots  chan struct{} // requests in flight; a flood beyond is answered 429
	// bodyTimeout bounds the reading of a request body, from when reading starts: a slow
	// upload would otherwise hold a slot and its share of the body budget as long as it likes.
	bodyTimeout time.Duration
	// bodies are the request bytes held in memory, all requests together: a request whose body
	// would take them past maxModelBuffered is answered 429 before it is read.
	bodies byteBudget
}

// Limits of the model forwarder.
const (
	maxModelRequest = 32 << 20 // a long conversation with images stays well below
	// maxModelRequests bounds the requests in flight: Claude Code runs a few at once (its
	// subagents too), and a flood beyond is refused rather than buffered.
	maxModelRequests = 32
	// maxModelBuffered bounds the request bodies held at once, all requests together. netd's
	// container has 256 MiB (render's netd memory), which 32 requests of 32 MiB would overrun
	// at once, and the OOM killer would end netd, its logs with it, in the middle of the run.
	maxModelBuffered = 64 << 20
	// maxModelRecord bounds the log line of a forwarded request: its path, model and reason
	// are bounded (200, 100 and 300 bytes before JSON escapes them, at most 6-fold).
	maxModelRecord = 8 << 10
	// maxUsageLine bounds one server-sent event line the usage reader looks into; a longer line
	// is forwarded all the same, unread.
	maxUsageLine = 1 << 20
	// maxUsageJSON bounds how much of a non-streamed response the usage reader keeps.
	maxUsageJSON = 8 << 20
	// modelBodyTimeout bounds the reading of one request body: the agent sends it over
	// loopback, where 32 MiB take well under a second.
	modelBodyTimeout = 30 * time.Second
	// modelHeaderTimeout bounds the wait for the upstream's response headers: a large
	// non-streamed completion takes minutes before its first byte.
	modelHeaderTimeout = 10 * time.Minute
)

// modelPaths are the API paths forwarded, by method: the Messages API, token counting and the
// model list. Anything else (the console's, OAuth's, telemetry) is refused.
var modelPaths = map[string]map[string]bool{
	http.MethodPost: {"/v1/messages": true, "/v1/messages/count_tokens": true},
	http.MethodGet:  {"/v1/models": true},
}

// Request headers passed on: the API's own and the SDK's descriptive ones. Authorization,
// x-api-key, cookies, forwarding and proxy headers never are; Accept-Encoding is dropped so
// that the usage reader sees plain text.
var (
	modelRequestHeaders  = []string{"Content-Type", "Accept", "User-Agent", "X-App"}
	modelRequestPrefixes = []string{"Anthropic-", "X-Stainless-"}
	modelResponseHeaders = []string{"Content-Type", "Cache-Control", "Request-Id", "Retry-After", "X-Should-Retry"}
	modelResponsePrefix  = "Anthropic-Ratelimit-"
)

// modelTLS is the forwarder's TLS configuration: the system's roots (Debian's bundle in the netd
// image) and every certificate file in dir (policy.ModelCADir: the user's image.ca_certificates),
// TLS 1.2 at least. A file that holds no certificate is an error: netd would otherwise refuse an
// upstream the user told it to trust, or worse, be started with roots nobody checked.
func modelTLS(dir string) (*tls.Config, error) {
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("reading %s: %w", dir, err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("reading CA certificate %s: %w", e.Name(), err)
		}
		if !pool.AppendCertsFromPEM(data) {
			return nil, fmt.Errorf("CA certificate %s holds no PEM certificate", e.Name())
		}
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

func newModelForwarder(cfg *current, dial func(ctx context.Context, name string, port int) (net.Conn, error), tc *tls.Config, log *jsonl) *modelForwarder {
	tr := &http.Transport{
		// The address the transport asks for is the policy's upstream (the only URL it is
		// given); netd resolves the name itself and opens the address for its own uid only.
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			host, port, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			p, err := strconv.Atoi(port)
			if err != nil {
				return nil, err
			}
			return dial(ctx, host, p)
		},
		TLSClientConfig:       tc,
		Proxy:                 nil,
		DisableCompression:    true,
		MaxIdleConnsPerHost:   8,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   dialTimeout,
		ResponseHeaderTimeout: modelHeaderTimeout,
	}
	client := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &modelForwarder{cfg: cfg, client: client, log: log, now: time.Now, slots: make(chan struct{}, maxModelRequests),
		bodyTimeout: modelBodyTimeout, bodies: byteBudget{max: maxModelBuffered}}
}

// ServeHTTP forwards one model request of the agent's.
func (f *modelForwarder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := f.now()
	rec := policy.ModelRecord{TS: policy.Timestamp(start), Method: r.Method, Path: cleanLogPath(r.URL.Path)}
	promised := false // the log keeps room for this request's record
	defer func() {
		rec.DurMS = f.now().Sub(start).Milliseconds()
		if promised {
			f.log.writePromised(rec, maxModelRecord)
		} else {
			f.log.write(rec)
		}
	}()
	select {
	case f.slots <- struct{}{}:
		defer func() { <-f.slots }()
	default:
		rec.Verdict, rec.Reason = policy.Denied, "too many requests in flight"
		rec.Status = modelError(w, http.StatusTooManyRequests, "abox netd: "+rec.Reason)
		return
	}
	cfg := f.cfg.get()
	if cfg.modelUpstream == nil || cfg.credential == "" {
		rec.Verdict, rec.Reason = policy.Error, "injected-credential mode is off"
		if cfg.modelUpstream != nil {
			rec.Reason = "netd holds no credential"
		}
		rec.Status = modelError(w, http.StatusServiceUnavailable, "abox netd: "+rec.Reason)
		return
	}
	if reason := modelRefusal(r); reason != "" {
		rec.Verdict, rec.Reason = policy.Denied, reason
		rec.Status = modelError(w, http.StatusForbidden, "abox netd: "+reason)
		return
	}
	if r.ContentLength > maxModelRequest {
		rec.Verdict, rec.Reason = policy.Denied, "request body over 32 MiB"
		rec.Status = modelError(w, http.StatusRequestEntityTooLarge, "abox netd: "+rec.Reason)
		return
	}
	// A body of unknown length (chunked) holds a place for the largest one.
	want := r.ContentLength
	if want < 0 {
		want = maxModelRequest
	}
	if !f.holdBody(want) {
		rec.Verdict, rec.Reason = policy.Denied, "too many request bytes in flight"
		w.Header().Set("Retry-After", "1")
		rec.Status = modelError(w, http.StatusTooManyRequests, "abox netd: "+rec.Reason)
		return
	}
	defer f.releaseBody(want)
	// The body's deadline starts now, when its reading does; the response, which may stream
	// for minutes, has none.
	rc := http.NewResponseController(w)
	if err := rc.SetReadDeadline(time.Now().Add(f.bodyTimeout)); err != nil {
		rec.Verdict, rec.Reason = policy.Error, "cannot bound the body's reading: "+oneLineErr(err)
		rec.Status = modelError(w, http.StatusInternalServerError, "abox netd: "+rec.Reason)
		return
	}
	body, err := readBody(r.Body, r.ContentLength)
	if err == nil {
		rc.SetReadDeadline(time.Time{})
	}
	// A failed read keeps its passed deadline: the server, which would otherwise read on for
	// the rest of the body before it answers, gives up at once and closes the connection.
	if errors.Is(err, os.ErrDeadlineExceeded) {
		w.Header().Set("Connection", "close")
		rec.Verdict, rec.Reason = policy.Denied, fmt.Sprintf("request body not received within %v", f.bodyTimeout)
		rec.Status = modelError(w, http.StatusRequestTimeout, "abox netd: "+rec.Reason)
		return
	}
	if err != nil || len(body) > maxModelRequest {
		rec.Verdict, rec.Reason = policy.Denied, "request body unreadable or over 32 MiB"
		rec.Status = modelError(w, http.StatusRequestEntityTooLarge, "abox netd: "+rec.Reason)
		return
	}
	// Every body is read before it goes, whatever its path; a GET has none.
	var no *modelBodyRefusal
	switch {
	case r.Method != http.MethodGet:
		no = checkModelBody(body, cfg.serverTools)
	case len(body) > 0:
		no = &modelBodyRefusal{http.StatusBadRequest, "invalid_request_error", "request body refused: a GET with a body"}
	}
	if no != nil {
		rec.Verdict, rec.Reason = policy.Denied, no.reason
		rec.Status = modelErrorOf(w, no.status, no.errType, "abox netd: "+no.reason)
		return
	}
	// What netd forwards is spent: it goes only with room in the log for its two records,
	// which a flood of refused requests filling the log would otherwise push out, and only once
	// the first is written.
	if !f.log.promise(2 * maxModelRecord) {
		rec.Verdict, rec.Reason = policy.Denied, "the model log is full: the request's usage could not be logged"
		rec.Status = modelError(w, http.StatusServiceUnavailable, "abox netd: "+rec.Reason)
		return
	}
	promised = true
	rec.ID = newModelID()
	rec.BytesUp = int64(len(body))
	rec.Model, rec.Stream = requestModel(body)
	if !f.writeInFlight(rec) {
		rec.Verdict, rec.Reason = policy.Error, "the request's record could not be written: not sent"
		rec.Status = modelError(w, http.StatusServiceUnavailable, "abox netd: "+rec.Reason)
		return
	}
	up := *cfg.modelUpstream
	up.Path += r.URL.Path
	up.RawQuery = r.URL.RawQuery
	// sent is set once the request's first bytes are written upstream: from then on the
	// upstream may bill it, whatever follows.
	var sent atomic.Bool
	ctx := httptrace.WithClientTrace(r.Context(), &httptrace.ClientTrace{WroteHeaders: func() { sent.Store(true) }})
	req, err := http.NewRequestWithContext(ctx, r.Method, up.String(), bytes.NewReader(body))
	if err != nil {
		rec.Verdict, rec.Reason = policy.Error, "not sent: "+oneLineErr(err)
		rec.Status = modelError(w, http.StatusBadGateway, "abox netd: "+oneLineErr(err))
		return
	}
	req.Header = modelHeaders(r.Header, cfg.credential)
	if len(body) > 0 {
		// The body is what netd read as JSON, so the upstream is told so, whatever the agent
		// said (another type or charset could have it read the bytes otherwise).
		req.Header.Set("Content-Type", "application/json")
	}
	req.Host = strings.TrimSuffix(up.Host, ":443")
	resp, err := f.client.Do(req)
	if err != nil {
		rec.Verdict, rec.Reason, rec.Status = noResponse(err, sent.Load(), r.Context().Err() != nil)
		if r.Context().Err() == nil {
			modelError(w, http.StatusBadGateway, "abox netd: the model API upstream failed: "+oneLineErr(err))
		}
		return
	}
	defer resp.Body.Close()
	rec.Verdict, rec.Status = policy.Allowed, resp.StatusCode
	for k, vs := range resp.Header {
		if passModelResponseHeader(k) {
			w.Header()[k] = vs
		}
	}
	w.WriteHeader(resp.StatusCode)
	u := newUsageReader(resp.Header.Get("Content-Type"))
	n, err := copyFlushing(w, io.TeeReader(resp.Body, u))
	rec.BytesDown = n
	// A cut stream lacks its closing message_delta, the only event with the output tokens, while
	// the upstream was generating them: the record says so, whoever cut it (the agent hanging up
	// cancels the request), so that its output count is known to be a floor.
	switch {
	case errors.Is(err, context.Canceled):
		rec.Reason = policy.ModelResponseCut + ": the agent hung up"
	case err != nil:
		rec.Reason = policy.ModelResponseCut + ": " + oneLineErr(err)
	}
	u.finish()
	if rec.Reason != "" && !u.seen() {
		// Cut before its usage: a non-streamed answer whose body did not come whole, a stream
		// before its message_start. The upstream may have billed it all.
		rec.Reason = policy.ModelNoUsage + strings.TrimPrefix(rec.Reason, policy.ModelResponseCut)
	}
	if rec.Reason == "" && u.cut() {
		// The upstream's side may see the agent go first and end the response cleanly, or end
		// a stream early itself: no message_stop, the output count is a floor all the same.
		rec.Reason = policy.ModelResponseCut + ": the stream ended before its message_stop"
	}
	if u.model != "" {
		rec.Model = u.model
	}
	rec.InputTokens, rec.OutputTokens = u.usage.InputTokens, u.usage.OutputTokens
	rec.CacheReadTokens, rec.CacheCreationTokens = u.usage.CacheReadInputTokens, u.usage.CacheCreationInputTokens
}

// noResponse is the verdict, reason and status of a request the upstream gave no response to:
// one whose bytes had left netd may have been billed whole, whoever went first (the agent
// hanging up cancels it); one that never left was not. The status is netd's 502 to an agent
// still there, none to one that left.
func noResponse(err error, sent, agentLeft bool) (verdict, reason string, status int) {
	why := oneLineErr(err)
	if agentLeft {
		why = "the agent hung up"
	} else {
		status = http.StatusBadGateway
	}
	if sent {
		return policy.Allowed, policy.ModelNoResponse + ": " + why, status
	}
	return policy.Error, "not sent: upstream: " + why, status
}

// writeInFlight writes rec as the record of a request about to leave, into the room promised
// for it, and reports whether it is in the log.
func (f *modelForwarder) writeInFlight(rec policy.ModelRecord) bool {
	rec.InFlight, rec.Verdict, rec.Reason = true, policy.Allowed, policy.ModelInFlight
	return f.log.writePromised(rec, maxModelRecord)
}

// newModelID returns a request's record ID: 16 random hex digits.
func newModelID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// holdBody takes n bytes of the forwarder's body budget, or reports false when they would take it
// past maxModelBuffered.
func (f *modelForwarder) holdBody(n int64) bool { return f.bodies.take(n) }

func (f *modelForwarder) releaseBody(n int64) { f.bodies.give(n) }

// readBody reads a request body of length n (-1: unknown) of at most maxModelRequest bytes
// ([readBounded]).
func readBody(r io.Reader, n int64) ([]byte, error) { return readBounded(r, n, maxModelRequest) }

// modelRefusal says why a request is not forwarded, or "" when it is: a method and path of the
// API, a clean path (no dot segments, no escaped slashes), no body on a GET.
func modelRefusal(r *http.Request) string {
	p := r.URL.Path
	if r.URL.RawPath != "" || strings.Contains(p, "/.") || strings.Contains(p, "//") || r.URL.Opaque != "" {
		return "unclean path"
	}
	paths, ok := modelPaths[r.Method]
	if !ok {
		return "method " + r.Method + " not forwarded"
	}
	if !paths[p] && !(r.Method == http.MethodGet && strings.HasPrefix(p, "/v1/models/") && !strings.Contains(p[len("/v1/models/"):], "/")) {
		return "path not forwarded"
	}
	return ""
}

// cleanLogPath is the path as it is logged: at most 200 bytes.
func cleanLogPath(p string) string {
	if len(p) > 200 {
		return p[:200] + "…"
	}
	return p
}

// modelHeaders builds the upstream request's headers from the agent's: the API's headers only,
// then the credential in the header its kind needs.
func modelHeaders(in http.Header, credential string) http.Header {
	out := http.Header{}
	for k, vs := range in {
		if passModelRequestHeader(k) {
			out[k] = append([]string(nil), vs...)
		}
	}
	if policy.CredentialKind(credential) == policy.CredentialOAuth {
		out.Set("Authorization", "Bearer "+credential)
		if !hasBeta(out.Values("Anthropic-Beta"), policy.OAuthBeta) {
			out.Add("Anthropic-Beta", policy.OAuthBeta)
		}
	} else {
		out.Set("X-Api-Key", credential)
	}
	return out
}

func passModelRequestHeader(k string) bool {
	k = http.CanonicalHeaderKey(k)
	for _, h := range modelRequestHeaders {
		if k == h {
			return true
		}
	}
	for _, p := range modelRequestPrefixes {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

func passModelResponseHeader(k string) bool {
	k = http.CanonicalHeaderKey(k)
	for _, h := range modelResponseHeaders {
		if k == h {
			return true
		}
	}
	return strings.HasPrefix(k, modelResponsePrefix)
}

// hasBeta reports whether the anthropic-beta values (comma-separated lists) hold beta.
func hasBeta(values []string, beta string) bool {
	for _, v := range values {
		for _, b := range strings.Split(v, ",") {
			if strings.TrimSpace(b) == beta {
				return true
			}
		}
	}
	return false
}

// requestModel reads the model and stream fields of a Messages request, for the log.
func requestModel(body []byte) (model string, stream bool) {
	var req struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
	}
	if json.Unmarshal(body, &req) != nil {
		return "", false
	}
	return logText(req.Model, 100), req.Stream
}

// logText bounds a string taken from a request or response before it is logged.
func logText(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// modelError answers a request netd does not forward with the API's own error shape, so the
// agent's client shows the reason.
func modelError(w http.ResponseWriter, status int, msg string) int {
	return modelErrorOf(w, status, "api_error", msg)
}

// modelErrorOf is modelError with the API's error type errType.
func modelErrorOf(w http.ResponseWriter, status int, errType, msg string) int {
	body, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": errType, "message": msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
	return status
}

// oneLineErr is an error's text on one line, bounded.
func oneLineErr(err error) string {
	return logText(strings.Join(strings.Fields(err.Error()), " "), 300)
}

// copyFlushing copies src to w, flushing after every read, so that streamed events reach the
// agent as they arrive.
func copyFlushing(w http.ResponseWriter, src io.Reader) (int64, error) {
	fl, _ := w.(http.Flusher)
	buf := make([]byte, 32<<10)
	var n int64
	for {
		k, err := src.Read(buf)
		if k > 0 {
			m, werr := w.Write(buf[:k])
			n += int64(m)
			if werr != nil {
				return n, werr
			}
			if fl != nil {
				fl.Flush()
			}
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// modelUpstreamOf parses the policy's model upstream, or returns nil when the policy has none.
func modelUpstreamOf(m *policy.ModelAPI) (*url.URL, error) {
	if m == nil {
		return nil, nil
	}
	u, err := policy.ModelUpstream(m.Upstream)
	if err != nil {
		return nil, fmt.Errorf("netd policy: %w", err)
	}
	return u, nil
}
