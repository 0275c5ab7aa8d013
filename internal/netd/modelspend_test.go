package netd

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/policy"
)

// waitModelRecords waits until the log holds n final records and returns them.
func waitModelRecords(t *testing.T, log *syncBuffer, n int) []policy.ModelRecord {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		recs := modelRecords(t, log)
		if len(recs) >= n {
			return recs
		}
		if time.Now().After(deadline) {
			t.Fatalf("the log holds %d final records, want %d: %s", len(recs), n, log.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestModelForwarderRecordsInFlightFirst: when the upstream receives a request, netd's log
// already holds its in-flight record (so netd dying then would leave the spend on disk), and
// the final record that follows carries the same ID, so that the run's accounting counts the
// request once. A refused request has one record and no ID.
func TestModelForwarderRecordsInFlightFirst(t *testing.T) {
	var log *syncBuffer
	atUpstream := make(chan []policy.ModelRecord, 1)
	up := newModelUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		atUpstream <- modelLines(t, log)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"model":"claude-test-1","usage":{"input_tokens":5,"output_tokens":7}}`)
	})
	base, log := serverToolsForwarder(t, up, false)
	resp := agentRequest(t, "POST", base+"/v1/messages", fetchBody(b64Image))
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	seen := <-atUpstream
	if len(seen) != 1 || !seen[0].InFlight || seen[0].ID == "" || seen[0].Reason != policy.ModelInFlight ||
		seen[0].Model != "claude-test-1" || !seen[0].UsageUnknown() {
		t.Fatalf("the log when the upstream got the request: %+v; want one in-flight record with an ID and the model", seen)
	}
	lines := modelLines(t, log)
	if len(lines) != 2 || lines[1].InFlight || lines[1].ID != seen[0].ID || lines[1].OutputTokens != 7 || lines[1].UsageUnknown() {
		t.Errorf("log %+v: want the in-flight record, then the final one with its ID and usage", lines)
	}
	resp = agentRequest(t, "POST", base+"/v1/messages", fetchBody(urlImage))
	resp.Body.Close()
	if lines := modelLines(t, log); len(lines) != 3 || lines[2].ID != "" || lines[2].Verdict != policy.Denied {
		t.Errorf("log %+v: want the refusal as one record without an ID", lines)
	}
}

// TestModelForwarderRecordsAbandonedRequests: the agent sends a non-streamed request (the
// upstream spends minutes on it before its first byte) and hangs up before the response's
// headers. The upstream had the request and may bill it: the record says so (no response
// seen), as it does for one abandoned after the headers but before the usage. A request that
// never left netd (its upstream unreachable) is recorded as not sent.
func TestModelForwarderRecordsAbandonedRequests(t *testing.T) {
	gotIt := make(chan struct{}, 4)
	up := newModelUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		gotIt <- struct{}{}
		if r.URL.Path == "/v1/messages/count_tokens" { // headers, then a body that stops
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"model":"claude-test-1",`)
			w.(http.Flusher).Flush()
		}
		<-r.Context().Done()
		panic(http.ErrAbortHandler) // the response is cut, never ended cleanly, whichever side notices first
	})
	base, log := serverToolsForwarder(t, up, false)

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"/v1/messages", strings.NewReader(`{"model":"claude-test-1","max_tokens":64000}`))
	done := make(chan error, 1)
	go func() {
		_, err := http.DefaultClient.Do(req)
		done <- err
	}()
	<-gotIt
	cancel()
	<-done
	r := waitModelRecords(t, log, 1)[0]
	if r.Verdict != policy.Allowed || !strings.HasPrefix(r.Reason, policy.ModelNoResponse) || r.Model != "claude-test-1" ||
		r.Status != 0 || !r.UsageUnknown() {
		t.Errorf("record %+v: want allowed, %q, the request's model, no status", r, policy.ModelNoResponse+": the agent hung up")
	}

	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "POST /v1/messages/count_tokens HTTP/1.1\r\nHost: x\r\nContent-Length: 25\r\n\r\n"+`{"model":"claude-test-1"}`)
	if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("the response's headers: %v, %v", resp, err)
	}
	c.Close()
	r = waitModelRecords(t, log, 2)[1]
	if r.Verdict != policy.Allowed || !strings.HasPrefix(r.Reason, policy.ModelNoUsage) || r.Status != 200 || !r.UsageUnknown() {
		t.Errorf("record %+v: want allowed 200, %q", r, policy.ModelNoUsage+"…")
	}

	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := closed.Addr().String()
	closed.Close()
	offline, offLog, _ := modelTestForwarderLimit(t, "https://"+addr, testAPIKey, up.trusting(), policy.DefaultLogLimit)
	resp := agentRequest(t, "POST", offline+"/v1/messages", `{"model":"claude-test-1"}`)
	resp.Body.Close()
	r = waitModelRecords(t, offLog, 1)[0]
	if resp.StatusCode != http.StatusBadGateway || r.Verdict != policy.Error || !strings.HasPrefix(r.Reason, "not sent") || r.UsageUnknown() {
		t.Errorf("unreachable upstream: status %d, record %+v; want 502 and an error, not sent", resp.StatusCode, r)
	}
}
