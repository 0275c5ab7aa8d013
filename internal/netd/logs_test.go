package netd

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/policy"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/miekg/dns"
)

// logLine is any line of a decision log: a DNS record, an aggregate, or the truncation line.
type logLine struct {
	policy.DNSRecord
	Truncated bool  `json:"truncated"`
	Limit     int64 `json:"limit"`
}

func dnsRec(name, qtype, verdict, reason string) policy.DNSRecord {
	return policy.DNSRecord{TS: policy.Timestamp(time.Now()), Name: name, Type: qtype, Verdict: verdict, RCode: "NOERROR", Reason: reason}
}

// allowedAAAA is one decision of the flood in issue 15: a distinct long name under an allowed
// wildcard, asked as AAAA.
func allowedAAAA(i int) policy.DNSRecord {
	return dnsRec(fmt.Sprintf("%s%d.flood.example.org.", floodLabels, i), "AAAA", policy.Allowed, "only A is forwarded")
}

// floodLabels make a flood's names long: four labels of 50 characters.
var floodLabels = strings.Repeat(strings.Repeat("x", 50)+".", 4)

func deniedA(name string) policy.DNSRecord {
	r := dnsRec(name, "A", policy.Denied, "not allowed")
	r.RCode = "NXDOMAIN"
	return r
}

func TestLogAggregatesRepeats(t *testing.T) {
	buf := &syncBuffer{}
	j := newJSONL(buf, maxLogBytes)
	for range 1000 {
		j.write(deniedA("exfil.example.net."))
	}
	j.write(dnsRec("api.example.com.", "A", policy.Allowed, ""))
	lines := logRecords[policy.DNSRecord](t, buf)
	if len(lines) != 2 || lines[0].Count != 0 || lines[1].Name != "api.example.com." {
		t.Fatalf("before the flush, want each decision's first line only:\n%s", buf)
	}
	j.flush()
	lines = logRecords[policy.DNSRecord](t, buf)
	if len(lines) != 3 {
		t.Fatalf("after the flush, want one aggregate line more:\n%s", buf)
	}
	agg := lines[2]
	want := policy.DNSRecord{Name: "exfil.example.net.", Type: "A", Verdict: policy.Denied, RCode: "NXDOMAIN", Reason: "not allowed", Count: 999}
	if diff := cmp.Diff(want, agg, cmpopts.IgnoreFields(policy.DNSRecord{}, "TS", "Last")); diff != "" || agg.TS == "" || agg.Last < agg.TS {
		t.Errorf("aggregate line (-want +got):\n%s%+v", diff, agg)
	}
	j.write(deniedA("exfil.example.net."))
	j.flush()
	lines = logRecords[policy.DNSRecord](t, buf)
	if last := lines[len(lines)-1]; len(lines) != 4 || last.Count != 1 {
		t.Errorf("a repeat after a flush: %+v, want one aggregate of 1", lines)
	}
	// A decision not repeated between two flushes is no longer counted: its next one is
	// written whole.
	j.flush()
	if n := len(logRecords[policy.DNSRecord](t, buf)); n != 4 {
		t.Errorf("a flush with no repeats wrote lines: %d, want 4", n)
	}
	j.write(deniedA("exfil.example.net."))
	lines = logRecords[policy.DNSRecord](t, buf)
	if last := lines[len(lines)-1]; len(lines) != 5 || last.Count != 0 || last.Name != "exfil.example.net." {
		t.Errorf("the decision after an idle flush: %+v, want it written whole", lines)
	}
	st := j.stat()
	if st.Decisions != 1003 || st.Aggregated != 1000 || st.Lines != 5 || st.Dropped != 0 {
		t.Errorf("stat = %+v", st)
	}
	if diff := cmp.Diff([]policy.NameCount{{Name: "exfil.example.net.", Count: 1002}}, st.Denied); diff != "" {
		t.Errorf("denied names (-want +got):\n%s", diff)
	}
}

// TestLogCapKeepsDenials is the flood of issue 15: distinct allowed decisions fill the log to
// its cap, and a denial after them is still written, after one truncation line, and counted.
func TestLogCapKeepsDenials(t *testing.T) {
	const limit = 64 << 10
	buf := &syncBuffer{}
	j := newJSONL(buf, limit)
	for i := range 2000 {
		j.write(allowedAAAA(i))
	}
	j.write(deniedA("wanted.example.net."))
	j.flush()
	if n := len(buf.String()); n > limit {
		t.Errorf("log is %d bytes, over its cap of %d", n, limit)
	}
	var lines []logLine
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var v logLine
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, v)
	}
	marks, denied := 0, -1
	for i, l := range lines {
		if l.Truncated {
			marks++
			if l.Limit != limit || l.TS == "" {
				t.Errorf("truncation line %+v", l)
			}
		}
		if l.Name == "wanted.example.net." {
			denied = i
		}
	}
	if marks != 1 {
		t.Errorf("%d truncation lines, want 1", marks)
	}
	if denied != len(lines)-1 {
		t.Errorf("the denial after the flood is line %d of %d, want the last", denied, len(lines))
	}
	st := j.stat()
	kept := int64(len(lines) - 2) // less the truncation and the denial
	if st.Dropped != 2000-kept || st.DroppedDenied != 0 || st.Decisions != 2001 || st.DeniedLost != 0 {
		t.Errorf("stat = %+v, want %d dropped, no denial among them", st, 2000-kept)
	}
	allowed := 0
	for _, l := range strings.Split(buf.String(), "\n") {
		if strings.Contains(l, `"verdict":"allowed"`) {
			allowed += len(l) + 1
		}
	}
	if room := limit - limit/deniedShare; allowed > room || allowed < room-1024 {
		t.Errorf("allowed lines take %d bytes, want them to fill the %d not kept for denials", allowed, room)
	}
}

// TestLogDeniedNamesPastTheCap: when denials fill the log too, every denied name is still in
// the statistics with its count, and the denials dropped from the log are counted.
func TestLogDeniedNamesPastTheCap(t *testing.T) {
	buf := &syncBuffer{}
	j := newJSONL(buf, 16<<10)
	for i := range 1000 {
		j.write(deniedA(fmt.Sprintf("chunk-%04d.exfil.example.net.", i)))
	}
	j.write(deniedA("wanted.example.net."))
	j.write(deniedA("wanted.example.net."))
	if strings.Contains(buf.String(), "wanted.example.net.") {
		t.Fatalf("the log had room for the last denial; the test needs it full:\n%s", buf)
	}
	st := j.stat()
	if len(st.Denied) != 1001 || st.Dropped == 0 || st.DroppedDenied != st.Dropped || st.DeniedLost != 0 || st.DeniedUntracked != 0 {
		t.Errorf("stat = %d names, dropped %d (%d denied), lost %d, untracked %d", len(st.Denied), st.Dropped, st.DroppedDenied, st.DeniedLost, st.DeniedUntracked)
	}
	found := false
	for _, n := range st.Denied {
		if n.Name == "wanted.example.net." {
			found = n.Count == 2
		}
	}
	if !found {
		t.Errorf("wanted.example.net. (x2) is not among the denied names")
	}
}

// TestLogMemoryBounds: distinct names cannot grow netd's tables without bound; the denials
// that find the table of names full are counted, and those not logged either counted as lost.
func TestLogMemoryBounds(t *testing.T) {
	j := newJSONL(&syncBuffer{}, policy.MinLogLimit)
	long := strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "."
	n := 0
	for ; j.st.DeniedUntracked < 100; n++ {
		j.write(deniedA(fmt.Sprintf("%s%07d.example.net.", long, n)))
		if n > 100000 {
			t.Fatal("the table of denied names never filled")
		}
	}
	for i := range 2 * maxRepeatKeys {
		j.write(dnsRec(fmt.Sprintf("n%d.example.org.", i), "AAAA", policy.Allowed, "only A is forwarded"))
	}
	st := j.stat()
	if j.deniedBytes > maxDeniedBytes || len(j.repeats) > maxRepeatKeys {
		t.Errorf("tables: %d bytes of denied names (bound %d), %d repeat keys (bound %d)", j.deniedBytes, maxDeniedBytes, len(j.repeats), maxRepeatKeys)
	}
	tracked := int64(0)
	for _, d := range st.Denied {
		tracked += d.Count
	}
	if tracked+st.DeniedUntracked != int64(n) {
		t.Errorf("%d denials tracked and %d untracked, want %d in all", tracked, st.DeniedUntracked, n)
	}
	if st.DeniedLost == 0 || st.DeniedLost > st.DeniedUntracked {
		t.Errorf("lost = %d, want the untracked denials the full log dropped (%d untracked)", st.DeniedLost, st.DeniedUntracked)
	}
	b, _ := json.Marshal(st.Denied)
	if len(b) > maxDeniedBytes {
		t.Errorf("the denied names take %d bytes of JSON, over %d", len(b), maxDeniedBytes)
	}
}

// failingWriter fails every write, as a full disk does.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

func TestLogCountsFailedWrites(t *testing.T) {
	j := newJSONL(failingWriter{}, maxLogBytes)
	j.write(deniedA("wanted.example.net."))
	j.write(allowedAAAA(1))
	st := j.stat()
	if st.Failed != 2 || st.Lines != 0 || len(st.Denied) != 1 {
		t.Errorf("stat = %+v, want 2 failed writes and the denied name kept", st)
	}
}

func TestLogStatsFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), policy.LogStatsFile)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	l := newLogs(serveOptions{dnsLog: &syncBuffer{}, connLog: &syncBuffer{}, mcpLog: &syncBuffer{}, modelLog: &syncBuffer{}, logStats: f}, policy.MinLogLimit)
	read := func() policy.LogStats {
		t.Helper()
		var s policy.LogStats
		if err := json.Unmarshal(readFile(t, path), &s); err != nil {
			t.Fatalf("%s: %v", policy.LogStatsFile, err)
		}
		return s
	}
	for range 3 {
		l.dns.write(deniedA("wanted.example.net."))
	}
	l.conn.write(policy.ConnRecord{TS: policy.Timestamp(time.Now()), Kind: policy.KindTLS, Name: "refused.example.net", Port: 443, Verdict: policy.Denied, Reason: "not allowed"})
	if err := l.flush(false); err != nil {
		t.Fatal(err)
	}
	s := read()
	want := map[string]policy.LogStat{
		policy.DNSLog: {Limit: policy.MinLogLimit, Decisions: 3, Aggregated: 2, Lines: 2,
			Denied: []policy.NameCount{{Name: "wanted.example.net.", Count: 3}}},
		policy.ConnLog: {Limit: policy.MinLogLimit, Decisions: 1, Lines: 1,
			Denied: []policy.NameCount{{Name: "refused.example.net", Count: 1}}},
		policy.MCPLog:   {Limit: policy.MinLogLimit, Denied: []policy.NameCount{}},
		policy.ModelLog: {Limit: policy.MinLogLimit, Denied: []policy.NameCount{}},
	}
	if diff := cmp.Diff(want, s.Logs, cmpopts.IgnoreFields(policy.LogStat{}, "Bytes")); diff != "" || s.Final {
		t.Errorf("snapshot (-want +got):\n%s final %v", diff, s.Final)
	}
	os.WriteFile(path, []byte("overwritten"), 0o644)
	if err := l.flush(false); err != nil || string(readFile(t, path)) != "overwritten" {
		t.Errorf("a snapshot without news was written (%v)", err)
	}
	if err := l.flush(true); err != nil {
		t.Fatal(err)
	}
	if s := read(); !s.Final || s.Logs[policy.DNSLog].Decisions != 3 {
		t.Errorf("final statistics = %+v", s)
	}
	l.dns.write(deniedA("late.example.net."))
	if err := l.flush(false); err != nil || !read().Final {
		t.Errorf("a snapshot after the final statistics replaced them (%v)", err)
	}
}

// TestSupervisorFloodKeepsDenials drives the flood of issue 15 through a whole netd with a
// 1 MiB cap from its policy: distinct AAAA lookups under an allowed wildcard until the log is
// full, then one denied lookup. dns.jsonl keeps the denial; logstats.json, written at stop,
// counts the drops and names the denial.
func TestSupervisorFloodKeepsDenials(t *testing.T) {
	p := policy.Netd{Version: policy.Version, Project: "p", Egress: []string{"*.example.org"}, LogLimit: policy.MinLogLimit}
	f := startSupervisorWith(t, okNFT(t), nil, p)
	f.waitEvent(t, policy.EventReady, 1)
	c := &dns.Client{Timeout: 5 * time.Second}
	for i := 0; ; i++ {
		q := new(dns.Msg)
		q.SetQuestion(fmt.Sprintf("%s%d.flood.example.org.", floodLabels, i), dns.TypeAAAA)
		if _, _, err := c.Exchange(q, f.addrs.dns); err != nil {
			t.Fatal(err)
		}
		if i > 0 && i%500 == 0 && strings.Contains(string(readFile(t, filepath.Join(f.logDir, policy.DNSLog))), `"truncated":true`) {
			break
		}
		if i > 20000 {
			t.Fatal("the flood never reached the cap")
		}
	}
	f.ask(t, "wanted.example.net.")
	f.sigs <- syscall.SIGTERM
	if err := <-f.result; err != nil {
		t.Fatal(err)
	}
	log := string(readFile(t, filepath.Join(f.logDir, policy.DNSLog)))
	if !strings.Contains(log, `"name":"wanted.example.net.","type":"A","verdict":"denied"`) {
		t.Errorf("dns.jsonl lost the denial after the flood; its tail:\n%s", log[max(0, len(log)-600):])
	}
	var s policy.LogStats
	if err := json.Unmarshal(readFile(t, filepath.Join(f.logDir, policy.LogStatsFile)), &s); err != nil {
		t.Fatal(err)
	}
	st := s.Logs[policy.DNSLog]
	if !s.Final || st.Limit != policy.MinLogLimit || st.Dropped == 0 || st.DroppedDenied != 0 || st.Bytes > policy.MinLogLimit {
		t.Errorf("logstats.json: final %v, dns %+v", s.Final, struct{ Limit, Bytes, Dropped, DroppedDenied int64 }{st.Limit, st.Bytes, st.Dropped, st.DroppedDenied})
	}
	if !strings.Contains(fmt.Sprint(st.Denied), "wanted.example.net.") {
		t.Errorf("logstats.json denied names %v lack wanted.example.net.", st.Denied)
	}
}

// TestLogAggregatesRefusedConnections: refusals repeat into aggregates that keep where the agent
// aimed and which path decided (the fast path's say kernel); an aim elsewhere, or the other
// path, is a decision of its own, and allowed connections are each written.
func TestLogAggregatesRefusedConnections(t *testing.T) {
	buf := &syncBuffer{}
	j := newJSONL(buf, maxLogBytes)
	start, n := time.Now(), 0
	refused := func(dst string) policy.ConnRecord { // each a millisecond after the last: aggregates come in order
		n++
		return policy.ConnRecord{TS: policy.Timestamp(start.Add(time.Duration(n) * time.Millisecond)), Kind: policy.KindHTTP,
			Name: "other.test", Port: 80, Verdict: policy.Denied, Reason: "not allowed", OrigDst: dst}
	}
	for range 3 {
		j.write(refused("192.0.2.1:80"))
	}
	j.write(refused("192.0.2.2:80"))
	for range 3 {
		r := refused("192.0.2.1:80")
		r.Kernel = true
		j.write(r)
	}
	for range 2 {
		j.write(policy.ConnRecord{Kind: policy.KindTLS, Name: "ok.test", Port: 443, Verdict: policy.Allowed, BytesUp: 10})
	}
	j.flush()
	var got []string
	for _, r := range logRecords[policy.ConnRecord](t, buf) {
		got = append(got, fmt.Sprintf("%s %s %s kernel=%v x%d", r.Name, r.Verdict, r.OrigDst, r.Kernel, r.Decisions()))
	}
	want := []string{"other.test denied 192.0.2.1:80 kernel=false x1", "other.test denied 192.0.2.2:80 kernel=false x1",
		"other.test denied 192.0.2.1:80 kernel=true x1", "ok.test allowed  kernel=false x1", "ok.test allowed  kernel=false x1",
		"other.test denied 192.0.2.1:80 kernel=false x2", "other.test denied 192.0.2.1:80 kernel=true x2"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("conn.jsonl (-want +got):\n%s", diff)
	}
}
