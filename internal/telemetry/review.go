package telemetry

import (
	"slices"

	"github.com/aboxhq/abox/internal/egress"
	"github.com/aboxhq/abox/internal/policy"
)

// Review is what `abox egress list` shows: the allowlist netd enforces, the hosts the user
// decided against, and the review queue of denied names that neither covers.
type Review struct {
	Allowed []Allowed   `json:"allowed"`
	Ignored []string    `json:"ignored"`
	Queue   []QueueItem `json:"queue"`
}

// Allowed is one entry of the enforced allowlist; Mandatory when abox added it itself.
type Allowed struct {
	Entry     string `json:"entry"`
	Mandatory bool   `json:"mandatory"`
}

// ReadReview builds the [Review] from the policy netd enforces (pol), the manifest's
// egress_ignored entries and the project's queue of denials at deniedPath. A denied name the
// policy now allows, or an ignored entry matches (as netd would match it), is not queued. The
// corrupt lines of the queue are returned, to be reported and skipped.
func ReadReview(deniedPath string, pol *policy.Netd, ignored []string) (*Review, []CorruptLine, error) {
	list, err := pol.List()
	if err != nil {
		return nil, nil, err
	}
	// egress_ignored is checked when the manifest loads; an entry that no longer parses
	// ignores nothing rather than hiding the queue.
	ign, _ := egress.ParseList(ignored, []int{1})
	rep := &Review{Ignored: ignored}
	if rep.Ignored == nil {
		rep.Ignored = []string{}
	}
	for _, e := range pol.Egress {
		rep.Allowed = append(rep.Allowed, Allowed{Entry: e, Mandatory: slices.Contains(pol.Mandatory, e)})
	}
	skip := func(name string) bool { return list.AllowsName(name) || (ign != nil && ign.AllowsName(name)) }
	queue, bad, err := Queue(deniedPath, skip)
	if err != nil {
		return nil, nil, err
	}
	rep.Queue = queue
	if rep.Queue == nil {
		rep.Queue = []QueueItem{}
	}
	return rep, bad, nil
}
