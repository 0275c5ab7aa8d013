package telemetry

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aboxhq/abox/internal/policy"
)

// ModelUsage is what a run spent through netd's model forwarder (injected-credential mode), read
// from netd's model.jsonl: requests by status, the tokens the responses reported, the models.
// Only the forwarder sees every request, so these are counts no client-side log can hide.
type ModelUsage struct {
	Requests int `json:"requests"`
	// Statuses counts the requests by HTTP status, as a string ("200", "429"); netd's own
	// refusals count under their status too and in Refused.
	Statuses map[string]int `json:"statuses"`
	Refused  int            `json:"refused"` // not forwarded: another path, a flood
	Failed   int            `json:"failed"`  // not sent: the upstream could not be reached
	// Cut counts the responses that ended early (the agent hung up, the stream broke) after
	// their usage began: their output tokens are a floor of what the upstream generated.
	Cut int `json:"cut"`
	// MayHaveBeenBilled counts the requests that left netd and whose usage netd never saw:
	// the agent or the upstream went before the response's usage, or netd died with the
	// request in flight. The upstream may have billed each whole, for tokens no record shows.
	MayHaveBeenBilled   int      `json:"may_have_been_billed"`
	InputTokens         int64    `json:"input_tokens"`
	OutputTokens        int64    `json:"output_tokens"`
	CacheReadTokens     int64    `json:"cache_read_tokens"`
	CacheCreationTokens int64    `json:"cache_creation_tokens"`
	Models              []string `json:"models"`
}

// ModelUsage sums the run's model requests, each once; nil when netd forwarded none
// (login-volume mode).
func (h *Harvest) ModelUsage() *ModelUsage {
	records := SettleModelRecords(h.Model)
	if len(records) == 0 {
		return nil
	}
	u := &ModelUsage{Statuses: map[string]int{}, Models: []string{}}
	for _, r := range records {
		u.Requests++
		if r.Status != 0 {
			u.Statuses[strconv.Itoa(r.Status)]++
		}
		switch r.Verdict {
		case policy.Denied:
			u.Refused++
		case policy.Error:
			u.Failed++
		}
		switch {
		case r.UsageUnknown():
			u.MayHaveBeenBilled++
		case r.Verdict == policy.Allowed && strings.HasPrefix(r.Reason, policy.ModelResponseCut):
			u.Cut++
		}
		u.InputTokens += r.InputTokens
		u.OutputTokens += r.OutputTokens
		u.CacheReadTokens += r.CacheReadTokens
		u.CacheCreationTokens += r.CacheCreationTokens
		if r.Model != "" && r.Verdict == policy.Allowed && !slices.Contains(u.Models, r.Model) {
			u.Models = append(u.Models, r.Model)
		}
	}
	slices.Sort(u.Models)
	return u
}

// SettleModelRecords returns one record per request of netd's model log, in the order the
// requests began: a forwarded request's final record in place of its in-flight one, and an
// in-flight record that has none (netd died before writing it) as the request's only record,
// its usage unknown.
func SettleModelRecords(records []policy.ModelRecord) []policy.ModelRecord {
	final := map[string]policy.ModelRecord{}
	started := map[string]bool{}
	for _, r := range records {
		switch {
		case r.InFlight:
			started[r.ID] = true
		case r.ID != "":
			final[r.ID] = r
		}
	}
	out := make([]policy.ModelRecord, 0, len(records))
	for _, r := range records {
		switch {
		case r.InFlight:
			if f, ok := final[r.ID]; ok {
				r = f
			}
		case started[r.ID]:
			continue // counted at its in-flight record's place
		}
		out = append(out, r)
	}
	return out
}

// String is the usage on one line: "12 requests (200×11, 429×1) · 1234 tokens in, 56 out,
// 700 cache read · claude-x".
func (u *ModelUsage) String() string {
	codes := slices.Sorted(func(yield func(string) bool) {
		for k := range u.Statuses {
			if !yield(k) {
				return
			}
		}
	})
	var st []string
	for _, c := range codes {
		st = append(st, fmt.Sprintf("%s×%d", c, u.Statuses[c]))
	}
	s := fmt.Sprintf("%d requests", u.Requests)
	if len(st) > 0 {
		s += " (" + strings.Join(st, ", ") + ")"
	}
	s += fmt.Sprintf(" · %d tokens in, %d out", u.InputTokens, u.OutputTokens)
	if u.CacheReadTokens > 0 || u.CacheCreationTokens > 0 {
		s += fmt.Sprintf(", %d cache read, %d cache written", u.CacheReadTokens, u.CacheCreationTokens)
	}
	if len(u.Models) > 0 {
		s += " · " + strings.Join(u.Models, ", ")
	}
	if u.Refused > 0 {
		s += fmt.Sprintf(" · %d refused by netd", u.Refused)
	}
	if u.Failed > 0 {
		s += fmt.Sprintf(" · %d failed upstream (not sent)", u.Failed)
	}
	if u.Cut > 0 {
		s += fmt.Sprintf(" · %d cut short (output tokens at least those counted)", u.Cut)
	}
	if u.MayHaveBeenBilled > 0 {
		s += fmt.Sprintf(" · %d sent with no usage seen: may have been billed, tokens unknown", u.MayHaveBeenBilled)
	}
	return s
}
