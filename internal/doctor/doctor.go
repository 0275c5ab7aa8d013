package doctor

import (
	"context"
	"fmt"
	"reflect"
	"runtime/debug"
	"strings"
	"time"
)

// Status is a check's verdict.
type Status string

// The four statuses.
const (
	OK   Status = "ok"
	Warn Status = "warn"
	Fail Status = "fail"
	Skip Status = "skip"
)

// Finding is what one check observed.
type Finding struct {
	Status Status `json:"status"`
	// Detail is what was observed, for a person: "publishes 0.0.0.0:8811". A check quotes text
	// the agent chose (file names, DNS names, tool names) through [termtext.Line], so that a
	// newline in a name cannot start a line of its own; [Report.WriteText] escapes every line
	// again as it prints.
	Detail string `json:"detail"`
	// Hint is an imperative naming the abox command that fixes it; set on every warn and fail.
	Hint string `json:"hint"`
	// Data holds the observation for machines (--json), exact, never escaped; never a secret.
	Data map[string]any `json:"data"`
}

// Check is one audit. ID is "<area>.<kebab>", stable: it appears in --json and --skip. Title
// is a lower-case noun phrase. Run never panics and never returns an error: when it cannot
// look, that is its finding.
type Check struct {
	ID    string
	Title string
	Run   func(ctx context.Context, e *Env) Finding
}

// Result is a check's id and title with its finding.
type Result struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Finding
}

// CheckTimeout bounds one check, docker calls included.
const CheckTimeout = 60 * time.Second

// Run runs checks in order, one at a time, and returns a result for each. Checks whose id is in
// skip are reported as skipped without running.
func Run(ctx context.Context, e *Env, checks []Check, skip map[string]bool) []Result {
	out := make([]Result, 0, len(checks))
	for _, c := range checks {
		f := Finding{Status: Skip, Detail: "skipped with --skip"}
		if !skip[c.ID] {
			f = runOne(ctx, e, c)
		}
		if f.Data == nil {
			f.Data = map[string]any{}
		}
		out = append(out, Result{ID: c.ID, Title: c.Title, Finding: f})
	}
	return out
}

// runOne runs a check with a timeout and turns a panic into a failing finding.
func runOne(ctx context.Context, e *Env, c Check) (f Finding) {
	defer func() {
		if r := recover(); r != nil {
			f = failf("this is a bug in abox; `abox doctor --skip "+c.ID+"` runs the other checks",
				"the check crashed: %v", r)
			f.Data = map[string]any{"stack": string(debug.Stack())}
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, CheckTimeout)
	defer cancel()
	return c.Run(ctx, e)
}

// Failed returns the results that failed.
func Failed(rs []Result) []Result {
	var out []Result
	for _, r := range rs {
		if r.Status == Fail {
			out = append(out, r)
		}
	}
	return out
}

// Summary counts results by status.
type Summary struct {
	OK   int `json:"ok"`
	Warn int `json:"warn"`
	Fail int `json:"fail"`
	Skip int `json:"skip"`
}

// Summarize counts rs.
func Summarize(rs []Result) Summary {
	var s Summary
	for _, r := range rs {
		switch r.Status {
		case OK:
			s.OK++
		case Warn:
			s.Warn++
		case Fail:
			s.Fail++
		default:
			s.Skip++
		}
	}
	return s
}

func (s Summary) String() string {
	return fmt.Sprintf("%d ok, %d warn, %d fail, %d skipped", s.OK, s.Warn, s.Fail, s.Skip)
}

// Finding constructors. Hints come first so that no warn or fail is written without one.

func okf(format string, args ...any) Finding {
	return Finding{Status: OK, Detail: fmt.Sprintf(format, args...)}
}

func warnf(hint, format string, args ...any) Finding {
	return Finding{Status: Warn, Detail: fmt.Sprintf(format, args...), Hint: hint}
}

func failf(hint, format string, args ...any) Finding {
	return Finding{Status: Fail, Detail: fmt.Sprintf(format, args...), Hint: hint}
}

func skipf(hint, format string, args ...any) Finding {
	return Finding{Status: Skip, Detail: fmt.Sprintf(format, args...), Hint: hint}
}

// with returns f with Data[key] = v. A nil slice becomes an empty one, so --json never says
// null.
func (f Finding) with(key string, v any) Finding {
	if f.Data == nil {
		f.Data = map[string]any{}
	}
	f.Data[key] = nonNil(v)
	return f
}

// nonNil turns a nil slice into an empty one.
func nonNil(v any) any {
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Slice && rv.IsNil() {
		return reflect.MakeSlice(rv.Type(), 0, 0).Interface()
	}
	return v
}

// problems turns a list of problems into a failing finding, or an ok one with okDetail.
func problems(list []string, hint, okDetail string) Finding {
	if len(list) == 0 {
		return okf("%s", okDetail)
	}
	return failf(hint, "%s", strings.Join(list, "; ")).with("problems", list)
}

// firstN joins at most n items, adding "and N more".
func firstN(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:n], ", ") + fmt.Sprintf(", and %d more", len(items)-n)
}
