//go:build e2e

package main

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/miekg/dns"
)

// benchOut decodes a bench mode's report.
func benchOut(t *testing.T, out string) benchReport {
	t.Helper()
	var r benchReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("report %q: %v", out, err)
	}
	return r
}

func TestDNSBench(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var names []string
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg).SetReply(r)
		mu.Lock()
		names = append(names, r.Question[0].Name)
		mu.Unlock()
		if !strings.HasPrefix(r.Question[0].Name, "nx") {
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: r.Question[0].Name, Rrtype: dns.TypeA,
				Class: dns.ClassINET, Ttl: 60}, A: net.IPv4(192, 0, 2, 1)})
		}
		w.WriteMsg(m)
	})}
	go srv.ActivateAndServe()
	t.Cleanup(func() { srv.Shutdown() })
	addr := pc.LocalAddr().String()

	out, errOut, code := claude(t, "net", "dnsbench", addr, "h%d.bench.test", "3")
	r := benchOut(t, out)
	if code != 0 || !r.OK || r.N != 3 || len(r.LatUS) != 3 || r.Mode != "dnsbench" {
		t.Errorf("dnsbench = %+v %q %d, want 3 answered queries", r, errOut, code)
	}
	mu.Lock()
	asked := strings.Join(names, ",")
	mu.Unlock()
	if want := "h0.bench.test.,h1.bench.test.,h2.bench.test."; asked != want {
		t.Errorf("names asked = %s, want %s", asked, want)
	}
	out, _, code = claude(t, "net", "dnsbench", addr, "nx.bench.test", "4", "2")
	if r := benchOut(t, out); code != 1 || r.OK || r.Errors != 4 || !strings.Contains(r.Error, "0 answers") {
		t.Errorf("dnsbench of an unanswered name = %+v %d, want 4 errors and exit 1", r, code)
	}
	if _, _, code := claude(t, "net", "dnsbench", addr, "x.test", "zero"); code != 2 {
		t.Errorf("dnsbench with a bad count exited %d, want 2", code)
	}
}

func TestTLSAndGetBench(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/bytes/100000" {
			w.Write(make([]byte, 100000))
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "https://")

	out, errOut, code := claude(t, "net", "tlsbench", addr, "srv.test", "5")
	if r := benchOut(t, out); code != 0 || !r.OK || len(r.LatUS) != 5 {
		t.Errorf("tlsbench = %+v %q %d, want 5 handshakes", r, errOut, code)
	}
	out, errOut, code = claude(t, "net", "getbench", addr, "srv.test", "/bytes/100000")
	if r := benchOut(t, out); code != 0 || !r.OK || r.Bytes != 100000 || r.MiBS <= 0 {
		t.Errorf("getbench = %+v %q %d, want 100000 bytes", r, errOut, code)
	}
	out, _, code = claude(t, "net", "getbench", addr, "srv.test", "/missing")
	if r := benchOut(t, out); code != 1 || !strings.Contains(r.Error, "404") {
		t.Errorf("getbench of a missing path = %+v %d, want the 404 and exit 1", r, code)
	}
}

func TestMCPBench(t *testing.T) {
	isolate(t)
	url := mcpTestServer(t, "sekrit")
	t.Setenv("STANDIN_MCP_CONFIG", writeMCPConfig(t, url, "sekrit"))
	for _, args := range [][]string{{"list"}, {"call", "echo", `{"text":"hi"}`}} {
		out, errOut, code := claude(t, append([]string{"mcp-call", "--repeat", "4"}, args...)...)
		var r mcpBenchReport
		json.Unmarshal([]byte(out), &r)
		if code != 0 || !r.OK || len(r.LatUS) != 4 || r.ConnectUS <= 0 || r.Mode != "mcp-"+args[0] {
			t.Errorf("mcp-call --repeat 4 %v = %s %q %d, want 4 operations and the set-up", args, out, errOut, code)
		}
	}
	if _, _, code := claude(t, "mcp-call", "--repeat", "2", "call", "echo", `{"text":"fail"}`); code != 1 {
		t.Errorf("repeated failing call exited %d, want 1", code)
	}
	if _, _, code := claude(t, "mcp-call", "--repeat", "2", "raw", "{}"); code != 2 {
		t.Errorf("--repeat with raw exited %d, want 2", code)
	}
}

func TestDNSFlood(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	asked := map[string]bool{}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		mu.Lock()
		asked[dns.TypeToString[r.Question[0].Qtype]+" "+r.Question[0].Name] = true
		mu.Unlock()
		w.WriteMsg(new(dns.Msg).SetReply(r))
	})}
	go srv.ActivateAndServe()
	t.Cleanup(func() { srv.Shutdown() })
	out, _, code := claude(t, "net", "dnsflood", pc.LocalAddr().String(), "q%d.flood.test", "50", "AAAA", "3")
	var r struct {
		OK       bool           `json:"ok"`
		Answered int            `json:"answered"`
		RCodes   map[string]int `json:"rcodes"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 || !r.OK || r.Answered != 50 || r.RCodes["NOERROR"] != 50 {
		t.Errorf("dnsflood = %s (exit %d), want 50 answered", out, code)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 50 || !asked["AAAA q49.flood.test."] {
		t.Errorf("asked %d distinct AAAA names, want 50 up to q49", len(asked))
	}
}
