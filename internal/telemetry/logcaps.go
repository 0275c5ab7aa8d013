package telemetry

import (
	"fmt"
	"strings"

	"github.com/aboxhq/abox/internal/policy"
)

// How far the counts of a [LogCap] go.
const (
	CountsFinal    = "final"    // netd's statistics at its stop
	CountsSnapshot = "snapshot" // netd's last statistics before it died: at least these
	CountsUnknown  = "unknown"  // the log says it reached its cap, and netd left no statistics
)

// LogCap says that one of a run's decision logs hit a bound of netd's: its byte cap, a write
// that failed, or the table of denied names. The agent chooses what netd decides, so a run
// whose logs hit a bound is one where the agent may have tried to hide something; abox says so
// in the run's summary, `abox logs` and doctor.
type LogCap struct {
	Log           string `json:"log"`             // dns.jsonl, conn.jsonl, mcp.jsonl
	Limit         int64  `json:"limit,omitempty"` // the cap in bytes
	Dropped       int64  `json:"dropped"`         // decisions the log has no line for
	DroppedDenied int64  `json:"dropped_denied"`  // the denials among them
	Failed        int64  `json:"failed,omitempty"`
	// Untracked are denials of names that found netd's table of denied names full; Lost are
	// those of them the log dropped too, whose names the review queue may lack.
	Untracked int64  `json:"denied_untracked,omitempty"`
	Lost      int64  `json:"denied_lost"`
	Counts    string `json:"counts"` // final, snapshot or unknown
}

// LogCaps returns the decision logs of the run that hit a bound, in the order dns, conn, mcp.
func (h *Harvest) LogCaps() []LogCap {
	var out []LogCap
	for _, log := range []string{policy.DNSLog, policy.ConnLog, policy.MCPLog, policy.ModelLog} {
		mark, marked := h.Truncated[log]
		c := LogCap{Log: log, Limit: mark.Limit, Counts: CountsUnknown}
		if st, ok := h.stat(log); ok {
			c = LogCap{Log: log, Limit: st.Limit, Dropped: st.Dropped, DroppedDenied: st.DroppedDenied, Failed: st.Failed,
				Untracked: st.DeniedUntracked, Lost: st.DeniedLost, Counts: CountsSnapshot}
			if h.Stats.Final {
				c.Counts = CountsFinal
			}
		}
		if marked || c.Dropped+c.Failed+c.Untracked+c.Lost > 0 {
			out = append(out, c)
		}
	}
	return out
}

func (h *Harvest) stat(log string) (policy.LogStat, bool) {
	if h.Stats == nil {
		return policy.LogStat{}, false
	}
	st, ok := h.Stats.Logs[log]
	return st, ok
}

// String says what the bound cost, in one line: "dns.jsonl: reached its 1 MiB cap; 12 decisions
// not logged, 3 of them denials; every denied name is in the review queue".
func (c LogCap) String() string {
	var parts []string
	switch {
	case c.Counts == CountsUnknown:
		parts = append(parts, fmt.Sprintf("reached its%s cap; netd left no count of what it dropped", size(c.Limit)))
	case c.Dropped > 0:
		p := fmt.Sprintf("reached its%s cap; %d decision(s) not logged", size(c.Limit), c.Dropped)
		if c.DroppedDenied > 0 {
			p += fmt.Sprintf(", %d of them denials", c.DroppedDenied)
		}
		parts = append(parts, p)
	}
	if c.Failed > 0 {
		parts = append(parts, fmt.Sprintf("%d decision(s) could not be written", c.Failed))
	}
	if c.Untracked > 0 && c.Lost == 0 {
		parts = append(parts, fmt.Sprintf("netd's table of denied names was full, %d later denial(s) are in the log alone", c.Untracked))
	}
	if c.Lost > 0 {
		parts = append(parts, fmt.Sprintf("%d denial(s) recorded nowhere (log and table of denied names full): the review queue may lack their names", c.Lost))
	} else if c.Counts == CountsFinal && c.Log != policy.MCPLog && c.Log != policy.ModelLog {
		parts = append(parts, "every denied name is in the review queue")
	}
	s := c.Log + ": " + strings.Join(parts, "; ")
	if c.Counts == CountsSnapshot {
		s += " (counts from netd's last snapshot: it did not stop cleanly)"
	}
	return s
}

// size is " 256 MiB", or "" when unknown.
func size(n int64) string {
	switch {
	case n <= 0:
		return ""
	case n%(1<<20) == 0:
		return fmt.Sprintf(" %d MiB", n>>20)
	case n%(1<<10) == 0:
		return fmt.Sprintf(" %d KiB", n>>10)
	}
	return fmt.Sprintf(" %d-byte", n)
}
