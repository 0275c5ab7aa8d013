package policy

import (
	"strings"
	"time"
)

// Log files netd writes under [LogDir], one JSON object a line.
const (
	DNSLog      = "dns.jsonl"     // one [DNSRecord] per query
	ConnLog     = "conn.jsonl"    // one [ConnRecord] per proxied or refused connection
	MCPLog      = "mcp.jsonl"     // one [MCPRecord] per forwarded MCP request
	ModelLog    = "model.jsonl"   // [ModelRecord]s of model-API requests (injected mode)
	EventLog    = "netd.jsonl"    // lifecycle events: start, ready, reload, errors
	CountersLog = "counters.json" // the ruleset's counters, written at shutdown
	// LogStatsFile is netd's account of its decision logs ([LogStats]): what each kept, counted
	// and dropped, and every distinct denied name. The serving child rewrites it every few
	// seconds and at stop.
	LogStatsFile = "logstats.json"
)

// SelfTestName is the denied name netd's self-test asks for at start; it is logged like any
// other query, and the CLI leaves it out of reports.
const SelfTestName = "abox-selftest.invalid"

// TimeFormat is the layout of every TS field: RFC 3339, UTC, milliseconds.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// Timestamp formats t for a TS field.
func Timestamp(t time.Time) string { return t.UTC().Format(TimeFormat) }

// Verdicts.
const (
	Allowed = "allowed"
	Denied  = "denied"
	Error   = "error"
	// Answered is an MCP request netd answered itself, as the protocol expects, without
	// forwarding it and without refusing the agent anything: server/discover, which the
	// gateway does not serve either and which clients follow with initialize.
	Answered = "answered"
)

// DNSRecord is one query netd answered.
type DNSRecord struct {
	TS      string   `json:"ts"`   // RFC 3339, UTC, milliseconds
	Name    string   `json:"name"` // as asked, lower-cased; invalid names escaped
	Type    string   `json:"type"` // A, AAAA, TXT…
	Verdict string   `json:"verdict"`
	RCode   string   `json:"rcode"` // NOERROR, NXDOMAIN, SERVFAIL…
	Answers []string `json:"answers,omitempty"`
	TTL     uint32   `json:"ttl,omitempty"`
	Reason  string   `json:"reason,omitempty"` // why denied or failed
	// Count and Last make the line an aggregate: it stands for Count more decisions identical
	// to an earlier line in name, type, verdict, rcode and reason, made from TS to Last. Answers
	// and TTL are then empty. Count 0 is one decision, the line itself.
	Count int64  `json:"count,omitempty"`
	Last  string `json:"last,omitempty"`
}

// Decisions returns how many decisions the line stands for.
func (r DNSRecord) Decisions() int64 { return max(r.Count, 1) }

// Kinds of [ConnRecord]: a connection through the TLS or HTTP proxy, or one refused at the
// connection bound of the model forwarder, the MCP forwarder or the resolver's TCP listener.
const (
	KindTLS   = "tls"
	KindHTTP  = "http"
	KindModel = "model"
	KindMCP   = "mcp"
	KindDNS   = "dns"
)

// Lifecycle events of [Event].
const (
	EventStart  = "start"
	EventReady  = "ready"
	EventReload = "reload"
	EventError  = "error"
	EventStop   = "stop"
	// EventFinished follows policy.FinishSignal: the serving child has stopped (the gateway
	// sessions closed, its logs flushed) and the counters are written, while netd's container
	// stays up so that its logs can be copied out before it is removed.
	EventFinished = "finished"
)

// FinishSignal is the signal abox sends netd once the agent's container is gone: netd then does
// what it does at a stop, reports [EventFinished], and idles until it is stopped or removed.
const FinishSignal = "USR1"

// ConnRecord is one connection netd proxied or refused.
type ConnRecord struct {
	TS        string `json:"ts"`
	Kind      string `json:"kind"`           // tls, http; model, mcp, dns for a connection refused at a bound
	Name      string `json:"name,omitempty"` // SNI or Host; "" when absent
	Port      int    `json:"port"`
	Verdict   string `json:"verdict"`
	Reason    string `json:"reason,omitempty"`   // why refused or failed
	OrigDst   string `json:"orig_dst,omitempty"` // where the agent aimed
	Upstream  string `json:"upstream,omitempty"` // where netd connected
	BytesUp   int64  `json:"bytes_up"`
	BytesDown int64  `json:"bytes_down"`
	DurMS     int64  `json:"dur_ms"`
	// Kernel marks a TLS flow decided on its held first packets and, once allowed, carried by
	// the kernel to the address the agent aimed at (one netd resolved for an allowed name):
	// its byte counts are the hello's, and DurMS is the decision's.
	Kernel bool `json:"kernel,omitempty"`
	// Count and Last make the line an aggregate of refusals identical in kind, name, port,
	// reason, OrigDst and Kernel, as for [DNSRecord]; Upstream, the byte counts and the
	// duration are then empty.
	Count int64  `json:"count,omitempty"`
	Last  string `json:"last,omitempty"`
}

// Decisions returns how many decisions the line stands for.
func (r ConnRecord) Decisions() int64 { return max(r.Count, 1) }

// ReasonECH is the Reason of a TLS [ConnRecord] refused because its ClientHello carries an
// encrypted ClientHello (ECH, or a draft's or ESNI's extension): the server it asks for is
// inside, where netd cannot read it, and a server that decrypts it serves that name instead of
// the one netd saw. Name is then the outer hello's server name.
const ReasonECH = "encrypted client hello"

// MCPRecord is one MCP request through the forwarder.
type MCPRecord struct {
	TS      string `json:"ts"`
	Method  string `json:"method"`
	Server  string `json:"server,omitempty"`
	Tool    string `json:"tool,omitempty"`
	Verdict string `json:"verdict"`
	Reason  string `json:"reason,omitempty"`
	Status  int    `json:"status,omitempty"`
	DurMS   int64  `json:"dur_ms"`
}

// ModelRecord is one request through the model-API forwarder, with what the upstream's
// response said it cost: the tokens and model of a Messages response, streamed or not.
//
// A request netd sends upstream has two records with one ID: the first, InFlight, is on disk
// before the request's first byte leaves netd, and the second, written once the exchange is
// over, replaces it. A request whose second record never came (netd died meanwhile) is known
// by its first alone, and counts as spent with its usage unknown ([ModelNoResponse]).
type ModelRecord struct {
	TS string `json:"ts"`
	// ID ties the records of one forwarded request together; empty on a request netd
	// refused, which has one record.
	ID       string `json:"id,omitempty"`
	InFlight bool   `json:"in_flight,omitempty"` // the record written before the request left
	Method   string `json:"method"`
	Path     string `json:"path"` // the API path asked, without the query
	Verdict  string `json:"verdict"`
	Reason   string `json:"reason,omitempty"`
	Status   int    `json:"status,omitempty"` // the upstream's, or netd's own refusal
	Model    string `json:"model,omitempty"`
	Stream   bool   `json:"stream,omitempty"`
	// Token counts as the response reported them (usage); zero when it reported none.
	InputTokens         int64 `json:"input_tokens,omitempty"`
	OutputTokens        int64 `json:"output_tokens,omitempty"`
	CacheReadTokens     int64 `json:"cache_read_tokens,omitempty"`
	CacheCreationTokens int64 `json:"cache_creation_tokens,omitempty"`
	BytesUp             int64 `json:"bytes_up"`
	BytesDown           int64 `json:"bytes_down"`
	DurMS               int64 `json:"dur_ms"`
}

// Reasons of a [ModelRecord] of a request netd sent upstream.
const (
	// ModelResponseCut starts the reason of a record whose response ended early: its output
	// tokens are a floor of what the upstream generated.
	ModelResponseCut = "response cut"
	// ModelNoResponse starts the reason of a record whose request left netd but whose usage
	// netd never saw: the agent or the upstream went before the response's headers (or, for
	// ModelNoUsage, before the usage they were followed by), or netd died with the request
	// in flight. The upstream may have generated and billed it whole: its tokens are unknown.
	ModelNoResponse = ModelResponseCut + ": no response seen"
	ModelNoUsage    = ModelResponseCut + ": no usage seen"
	// ModelInFlight is the reason of the record written before a request leaves netd.
	ModelInFlight = "in flight"
)

// UsageUnknown reports whether the record is of a request that left netd and whose usage
// netd never saw, so that it may have been billed for tokens no record shows.
func (r ModelRecord) UsageUnknown() bool {
	return r.InFlight || strings.HasPrefix(r.Reason, ModelNoResponse) || strings.HasPrefix(r.Reason, ModelNoUsage)
}

// Truncation is the line netd writes into a decision log when the log first reaches its cap:
// from TS on, only denials are written, into the part of the cap kept for them, and everything
// else is counted in [LogStats] and dropped.
type Truncation struct {
	TS        string `json:"ts"`
	Truncated bool   `json:"truncated"` // always true
	Limit     int64  `json:"limit"`     // the log's cap in bytes
}

// LogStats is [LogStatsFile]: per decision log, by file name ([DNSLog], [ConnLog], [MCPLog]).
type LogStats struct {
	TS    string             `json:"ts"`
	Final bool               `json:"final"` // written at stop; false in the snapshots before it
	Logs  map[string]LogStat `json:"logs"`
}

// LogStat accounts for one decision log. Every decision is written on a line of its own,
// counted into an aggregate line, or dropped; every denial of a name is, besides, counted in
// Denied, or in DeniedUntracked once Denied is full.
type LogStat struct {
	Limit      int64 `json:"limit"`      // the cap in bytes
	Bytes      int64 `json:"bytes"`      // bytes written
	Lines      int64 `json:"lines"`      // lines written, aggregates and the truncation line included
	Decisions  int64 `json:"decisions"`  // decisions made
	Aggregated int64 `json:"aggregated"` // decisions counted into aggregate lines
	Dropped    int64 `json:"dropped"`    // decisions not logged because the log was at its cap
	// DroppedDenied are the denials among Dropped.
	DroppedDenied int64 `json:"dropped_denied"`
	Failed        int64 `json:"failed"` // decisions whose line could not be written
	// Denied is every distinct name denied (DNS, conn), with how often, up to a bound on their
	// size; the review queue reads it, so a denied name reaches it even when the log was full.
	Denied []NameCount `json:"denied"`
	// DeniedUntracked are denials of names that found Denied full.
	DeniedUntracked int64 `json:"denied_untracked"`
	// DeniedLost are the denials of DeniedUntracked whose line was not written either: their
	// names may be missing from the review queue.
	DeniedLost int64 `json:"denied_lost"`
}

// NameCount is a name and how often it was seen.
type NameCount struct {
	Name  string `json:"name"`
	Count int64  `json:"count"`
}

// Event is a netd lifecycle line. The first "ready" event on netd's stdout is what the CLI waits
// for before it starts the agent.
type Event struct {
	TS     string `json:"ts"`
	Event  string `json:"event"` // start, ready, reload, error, stop
	Detail string `json:"detail,omitempty"`
}

// Counters are the ruleset's counters at shutdown.
type Counters struct {
	TS            string        `json:"ts"`
	DroppedPkts   int64         `json:"dropped_packets"`
	DroppedBytes  int64         `json:"dropped_bytes"`
	AcceptedPkts  int64         `json:"accepted_packets"`
	AcceptedBytes int64         `json:"accepted_bytes"`
	Rules         []RuleCounter `json:"rules"`
}

// RuleCounter is one counted rule.
type RuleCounter struct {
	Chain   string `json:"chain"`
	Comment string `json:"comment"`
	Packets int64  `json:"packets"`
	Bytes   int64  `json:"bytes"`
}
