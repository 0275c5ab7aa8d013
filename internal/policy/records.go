package policy

import "time"

// Log files netd writes under [LogDir], one JSON object a line.
const (
	DNSLog      = "dns.jsonl"     // one [DNSRecord] per query
	ConnLog     = "conn.jsonl"    // one [ConnRecord] per proxied or refused connection
	MCPLog      = "mcp.jsonl"     // one [MCPRecord] per forwarded MCP request
	EventLog    = "netd.jsonl"    // lifecycle events: start, ready, reload, errors
	CountersLog = "counters.json" // the ruleset's counters, written at shutdown
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
}

// Kinds of [ConnRecord].
const (
	KindTLS  = "tls"
	KindHTTP = "http"
)

// Lifecycle events of [Event].
const (
	EventStart  = "start"
	EventReady  = "ready"
	EventReload = "reload"
	EventError  = "error"
	EventStop   = "stop"
)

// ConnRecord is one connection netd proxied or refused.
type ConnRecord struct {
	TS        string `json:"ts"`
	Kind      string `json:"kind"`           // tls, http
	Name      string `json:"name,omitempty"` // SNI or Host; "" when absent
	Port      int    `json:"port"`
	Verdict   string `json:"verdict"`
	Reason    string `json:"reason,omitempty"`   // why refused or failed
	OrigDst   string `json:"orig_dst,omitempty"` // where the agent aimed
	Upstream  string `json:"upstream,omitempty"` // where netd connected
	BytesUp   int64  `json:"bytes_up"`
	BytesDown int64  `json:"bytes_down"`
	DurMS     int64  `json:"dur_ms"`
}

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
