package netd

import (
	"cmp"
	"context"
	"encoding/json"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/aboxhq/abox/internal/policy"
)

// The decision logs are the run's audit trail and the source of its review queue, and the agent
// decides what goes into them: which names it asks, of which type, how often and how fast. So
// each log is bounded, no bound can hide a denial silently, and every bound says when it was hit:
//
//   - repeats of one decision (DNS: name, type, verdict, rcode and reason; a refused connection:
//     kind, name, port, reason, the address aimed at and the path, proxy or fast) are written
//     once, then counted, and
//     written as one aggregate line per decision every flushInterval; a flood of one pattern
//     costs a line every two seconds. At most maxRepeatKeys decisions are counted at a time;
//     others are written whole;
//   - each log has a byte cap (policy.Netd.LogLimit). Lines that are not denials may fill only
//     the part of it not kept for denials (1/deniedShare), so a flood of allowed decisions (as
//     many distinct names as it likes under an allowed wildcard) cannot push a denial out. The
//     first line dropped leaves a [policy.Truncation] line;
//   - beside the log, every distinct name denied (DNS and connections) is counted in memory, up
//     to maxDeniedBytes of names per log, so that a denied name reaches the review queue even
//     when denials fill the log too. Denials of names that find the table full are counted,
//     and those whose line was dropped as well are counted as lost;
//   - the counts and the denied names go to policy.LogStatsFile every flushInterval and at stop,
//     where the CLI reads them into the run's record, its summary, `abox logs` and doctor.
//
// netd's memory for this is bounded by the two tables, per log: maxRepeatKeys decisions of at
// most a few hundred bytes each, and maxDeniedBytes of names (the charge per name covers the
// map's own overhead). Both full, with names of the longest kind, take about 5 MiB of heap.
const (
	deniedShare     = 4                      // 1/deniedShare of each cap is kept for denials
	markerRoom      = 256                    // bytes of each cap always left for the truncation line
	maxRepeatKeys   = 4096                   // decisions whose repeats are counted at a time, per log
	maxDeniedBytes  = 4 << 20                // JSON size of the distinct denied names kept, per log
	deniedEntryCost = 64                     // bytes charged per denied name besides its JSON text
	flushInterval   = 2 * time.Second        // how often aggregates and the statistics are written
	maxLogBytes     = policy.DefaultLogLimit // the cap when the policy sets none
)

// jsonl is one decision log: JSON lines appended to a writer up to a byte cap, with repeats
// aggregated and every denied name counted, as described above. It is safe for concurrent use.
// A nil *jsonl discards everything.
type jsonl struct {
	mu          sync.Mutex
	w           io.Writer
	now         func() time.Time
	st          policy.LogStat // the counters; Denied is filled in by stat
	marked      bool           // the truncation line is written
	repeats     map[repeatKey]*repeat
	denied      map[string]int64
	deniedBytes int64
	// promised is room of the cap kept for records written later ([jsonl.promise]): no other
	// line may take it.
	promised int64
}

func newJSONL(w io.Writer, limit int64) *jsonl {
	return &jsonl{w: w, now: time.Now, st: policy.LogStat{Limit: limit},
		repeats: map[repeatKey]*repeat{}, denied: map[string]int64{}}
}

// repeatKey is what makes two decisions the same decision.
type repeatKey struct {
	kind                              string // "dns", or the connection's kind
	name, typ, verdict, rcode, reason string
	port                              int
	origDst                           string // where the agent aimed a connection
	kernel                            bool   // decided on the fast path ([policy.ConnRecord.Kernel])
}

// repeat counts the repeats of a decision since its last line.
type repeat struct {
	count       int64
	first, last string // timestamps of the first and the last repeat
}

// decision is what the log needs to know of a record.
type decision struct {
	key       repeatKey
	aggregate bool   // repeats of the key are counted, not written
	denied    bool   // a denial: it may use the part of the cap kept for denials
	queued    bool   // a denial whose name belongs in the review queue
	name, ts  string // the name denied; the record's timestamp
}

func decisionOf(v any) decision {
	switch r := v.(type) {
	case policy.DNSRecord:
		denied := r.Verdict == policy.Denied
		return decision{key: repeatKey{kind: "dns", name: r.Name, typ: r.Type, verdict: r.Verdict, rcode: r.RCode, reason: r.Reason},
			aggregate: true, denied: denied, queued: denied, name: r.Name, ts: r.TS}
	case policy.ConnRecord:
		denied := r.Verdict == policy.Denied
		return decision{key: repeatKey{kind: r.Kind, name: r.Name, verdict: r.Verdict, reason: r.Reason, port: r.Port, origDst: r.OrigDst,
			kernel: r.Kernel},
			aggregate: denied, denied: denied, queued: denied, name: r.Name, ts: r.TS}
	case policy.MCPRecord:
		return decision{denied: r.Verdict == policy.Denied, ts: r.TS}
	case policy.ModelRecord:
		return decision{denied: r.Verdict == policy.Denied, ts: r.TS}
	}
	return decision{}
}

// line is the aggregate line of k's repeats.
func (k repeatKey) line(r *repeat) any {
	if k.kind == "dns" {
		return policy.DNSRecord{TS: r.first, Name: k.name, Type: k.typ, Verdict: k.verdict, RCode: k.rcode,
			Reason: k.reason, Count: r.count, Last: r.last}
	}
	return policy.ConnRecord{TS: r.first, Kind: k.kind, Name: k.name, Port: k.port, Verdict: k.verdict,
		Reason: k.reason, OrigDst: k.origDst, Kernel: k.kernel, Count: r.count, Last: r.last}
}

// write logs one decision: a policy.DNSRecord, ConnRecord or MCPRecord.
func (j *jsonl) write(v any) {
	if j == nil {
		return
	}
	d := decisionOf(v)
	j.mu.Lock()
	defer j.mu.Unlock()
	j.st.Decisions++
	tracked := d.queued && j.trackDenied(d.name)
	if r := j.repeats[d.key]; d.aggregate && r != nil {
		if r.count == 0 {
			r.first = d.ts
		}
		r.count++
		r.last = d.ts
		j.st.Aggregated++
		return // its first line was written: the name is in the log
	}
	written := j.put(v, d.denied, 1)
	if written && d.aggregate && len(j.repeats) < maxRepeatKeys {
		j.repeats[d.key] = &repeat{}
	}
	if d.queued && !tracked && !written {
		j.st.DeniedLost++
	}
}

// trackDenied counts a denial of name in the table of denied names, and reports whether the
// table holds the name.
func (j *jsonl) trackDenied(name string) bool {
	if _, ok := j.denied[name]; ok {
		j.denied[name]++
		return true
	}
	text, _ := json.Marshal(name)
	cost := int64(len(text)) + deniedEntryCost
	if j.deniedBytes+cost > maxDeniedBytes {
		j.st.DeniedUntracked++
		return false
	}
	j.denied[name] = 1
	j.deniedBytes += cost
	return true
}

// put writes v, standing for n decisions, as one line if the cap has room for it, and counts
// them as dropped otherwise. A denial may use the whole cap but the truncation line's room;
// anything else only the part not kept for denials.
func (j *jsonl) put(v any, denied bool, n int64) bool {
	b, err := json.Marshal(v)
	if err != nil {
		j.st.Failed += n
		return false
	}
	b = append(b, '\n')
	room := j.st.Limit - j.st.Limit/deniedShare
	if denied {
		room = j.st.Limit - markerRoom
	}
	if j.st.Bytes+j.promised+int64(len(b)) > room {
		j.truncate()
		j.st.Dropped += n
		if denied {
			j.st.DroppedDenied += n
		}
		return false
	}
	if !j.append(b) {
		j.st.Failed += n
		return false
	}
	return true
}

// promise keeps n bytes of the cap for one record to be written later with [jsonl.writePromised],
// and reports false when the part of the cap not kept for denials has no such room left. The
// model forwarder promises before it forwards a request, so that no spending goes unlogged.
// A nil *jsonl keeps every promise.
func (j *jsonl) promise(n int64) bool {
	if j == nil {
		return true
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.st.Bytes+j.promised+n > j.st.Limit-j.st.Limit/deniedShare {
		j.truncate()
		return false
	}
	j.promised += n
	return true
}

// writePromised writes v into the n bytes promised for it, and reports whether it reached the
// log: it may use the whole cap, as a denial may, since the promise kept its room from every
// other line. A nil *jsonl takes every line.
func (j *jsonl) writePromised(v any, n int64) bool {
	if j == nil {
		return true
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.promised -= n
	j.st.Decisions++
	return j.put(v, true, 1)
}

// truncate writes the truncation line, once.
func (j *jsonl) truncate() {
	if j.marked {
		return
	}
	j.marked = true
	b, _ := json.Marshal(policy.Truncation{TS: policy.Timestamp(j.now()), Truncated: true, Limit: j.st.Limit})
	j.append(append(b, '\n'))
}

// append writes one line and accounts for the bytes that reached the file.
func (j *jsonl) append(b []byte) bool {
	n, err := j.w.Write(b)
	j.st.Bytes += int64(n)
	if err != nil {
		return false
	}
	j.st.Lines++
	return true
}

// flush writes an aggregate line for every decision repeated since its last line, oldest
// first, and stops counting those that were not repeated.
func (j *jsonl) flush() {
	if j == nil {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	type pending struct {
		k repeatKey
		r *repeat
	}
	var due []pending
	for k, r := range j.repeats {
		if r.count == 0 {
			delete(j.repeats, k)
			continue
		}
		due = append(due, pending{k, r})
	}
	slices.SortFunc(due, func(a, b pending) int { return cmp.Compare(a.r.first, b.r.first) })
	for _, p := range due {
		j.put(p.k.line(p.r), p.k.verdict == policy.Denied, p.r.count)
		*p.r = repeat{}
	}
}

// stat returns the log's counters and its denied names, sorted.
func (j *jsonl) stat() policy.LogStat {
	if j == nil {
		return policy.LogStat{Denied: []policy.NameCount{}}
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	st := j.st
	st.Denied = make([]policy.NameCount, 0, len(j.denied))
	for name, n := range j.denied {
		st.Denied = append(st.Denied, policy.NameCount{Name: name, Count: n})
	}
	slices.SortFunc(st.Denied, func(a, b policy.NameCount) int { return cmp.Compare(a.Name, b.Name) })
	return st
}

// logs are the child's decision logs and where their statistics go.
type logs struct {
	dns, conn, mcp, model *jsonl
	stats                 statsFile // nil: none
	now                   func() time.Time

	mu        sync.Mutex // one flush at a time
	decisions int64      // decisions at the last statistics written
	final     bool       // the final statistics are written: no snapshot may replace them
	failed    bool       // writing the statistics failed once
}

// statsFile is where policy.LogStatsFile is rewritten: a descriptor the supervisor opened.
type statsFile interface {
	io.WriterAt
	Truncate(size int64) error
}

// keep flushes the logs every interval until ctx ends.
func (l *logs) keep(ctx context.Context, every time.Duration, report func(error)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := l.flush(false); err != nil {
				report(err)
			}
		}
	}
}

// flush writes the aggregate lines and then the statistics, when anything changed since the
// last ones or when final (at stop); after the final ones it does nothing. An error is
// returned only the first time.
func (l *logs) flush(final bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.final {
		return nil
	}
	l.final = final
	for _, j := range []*jsonl{l.dns, l.conn, l.mcp, l.model} {
		j.flush()
	}
	s := policy.LogStats{TS: policy.Timestamp(l.now()), Final: final, Logs: map[string]policy.LogStat{
		policy.DNSLog: l.dns.stat(), policy.ConnLog: l.conn.stat(), policy.MCPLog: l.mcp.stat(), policy.ModelLog: l.model.stat()}}
	var decisions int64
	for _, st := range s.Logs {
		decisions += st.Decisions
	}
	if l.stats == nil || (!final && decisions == l.decisions) {
		return nil
	}
	l.decisions = decisions
	err := l.writeStats(s)
	if err != nil && !l.failed {
		l.failed = true
		return err
	}
	return nil
}

// writeStats replaces the statistics file's content.
func (l *logs) writeStats(s policy.LogStats) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if err := l.stats.Truncate(0); err != nil {
		return err
	}
	_, err = l.stats.WriteAt(append(b, '\n'), 0)
	return err
}

// since returns the milliseconds elapsed from start, for the DurMS of a record.
func since(start time.Time) int64 { return time.Since(start).Milliseconds() }
