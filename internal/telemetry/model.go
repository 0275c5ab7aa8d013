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
	Failed   int            `json:"failed"`  // the upstream could not be reached
	// Cut counts the responses that ended early (the agent hung up, the stream broke): their
	// output tokens are a floor of what the upstream generated.
	Cut                 int      `json:"cut"`
	InputTokens         int64    `json:"input_tokens"`
	OutputTokens        int64    `json:"output_tokens"`
	CacheReadTokens     int64    `json:"cache_read_tokens"`
	CacheCreationTokens int64    `json:"cache_creation_tokens"`
	Models              []string `json:"models"`
}

// ModelUsage sums the run's model requests; nil when netd forwarded none (login-volume mode).
func (h *Harvest) ModelUsage() *ModelUsage {
	if len(h.Model) == 0 {
		return nil
	}
	u := &ModelUsage{Statuses: map[string]int{}, Models: []string{}}
	for _, r := range h.Model {
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
		if r.Verdict == policy.Allowed && strings.HasPrefix(r.Reason, policy.ModelResponseCut) {
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
		s += fmt.Sprintf(" · %d failed upstream", u.Failed)
	}
	if u.Cut > 0 {
		s += fmt.Sprintf(" · %d cut short (output tokens at least those counted)", u.Cut)
	}
	return s
}
