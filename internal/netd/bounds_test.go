package netd

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// stallingExchanger answers every question once release is closed, counting those it holds.
type stallingExchanger struct {
	release chan struct{}
	mu      sync.Mutex
	held    int
}

func (s *stallingExchanger) exchange(ctx context.Context, name string, qtype uint16) (*dns.Msg, error) {
	s.mu.Lock()
	s.held++
	s.mu.Unlock()
	select {
	case <-s.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	return m, nil
}

// TestDNSLookupsBounded: the resolver holds at most its bound of upstream lookups; a query past
// it is answered SERVFAIL at once and logged, and a place comes back when a lookup ends.
func TestDNSLookupsBounded(t *testing.T) {
	up := &stallingExchanger{release: make(chan struct{})}
	log := &syncBuffer{}
	h := &dnsHandler{cfg: testConfig(t, []string{"api.example.com"}, nil, ""), res: up, sets: &fakeSets{},
		log: newJSONL(log, maxLogBytes), now: time.Now, lookups: make(chan struct{}, 2)}
	ask := func() *dns.Msg {
		q := new(dns.Msg)
		q.SetQuestion("api.example.com.", dns.TypeA)
		m, _ := h.answer(context.Background(), q)
		return m
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); ask() }()
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		up.mu.Lock()
		n := up.held
		up.mu.Unlock()
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the two lookups never reached upstream")
		}
	}
	third := make(chan *dns.Msg, 1)
	go func() { third <- ask() }()
	select {
	case m := <-third:
		if m.Rcode != dns.RcodeServerFailure {
			t.Errorf("a query past the bound: %s, want SERVFAIL at once", dns.RcodeToString[m.Rcode])
		}
	case <-time.After(2 * time.Second):
		t.Error("a query past the bound waits for upstream instead of failing at once")
	}
	close(up.release)
	wg.Wait()
	if m := ask(); m.Rcode != dns.RcodeSuccess {
		t.Errorf("a query once the lookups ended: %s, want it answered", dns.RcodeToString[m.Rcode])
	}
}

// TestMCPForwarderBoundsHeldBodies: the MCP forwarder holds request bodies within its budget,
// all requests together: once slow uploads hold it, another request is answered 429 before its
// body is read; and a body that takes longer than its deadline is refused, giving its share back.
func TestMCPForwarderBoundsHeldBodies(t *testing.T) {
	g := startGateway(t, true)
	m := projectMCP()
	m.Upstream = fmt.Sprintf("http://abox-gw-test:%d/mcp", g.port)
	fw := newMCPForwarder(testConfig(t, []string{"api.example.com"}, m, gatewayToken, fmt.Sprintf("127.0.0.1:%d", g.port)),
		newJSONL(&syncBuffer{}, maxLogBytes))
	fw.held.max = 2 * maxMCPRequest
	fw.bodyTimeout = 2 * time.Second
	ts := httptest.NewServer(fw)
	defer ts.Close()
	addr := strings.TrimPrefix(ts.URL, "http://")
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", mcpPath, maxMCPRequest)
	}
	held := func() int64 {
		fw.held.mu.Lock()
		defer fw.held.mu.Unlock()
		return fw.held.held
	}
	for deadline := time.Now().Add(5 * time.Second); held() < 2*maxMCPRequest; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the forwarder holds %d bytes for the two slow uploads", held())
		}
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	resp, err := http.Post(ts.URL+mcpPath, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a request with the budget held: %d, want 429", resp.StatusCode)
	}
	for deadline := time.Now().Add(10 * time.Second); held() > 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the slow uploads still hold %d bytes past their deadline", held())
		}
	}
}
