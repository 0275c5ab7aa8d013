package netd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aboxhq/abox/internal/policy"
)

// elemKey is one element of a set.
type elemKey struct {
	set  string
	addr netip.Addr
	port int
}

// elemState is what the supervisor remembers of an element it added: when it expires, and in the
// agent set the names it was opened for.
type elemState struct {
	until time.Time
	names []string
}

// maxElemNames bounds the names remembered per element. Forgetting one can only revoke an
// element early (the agent's next lookup opens it again), never keep it open.
const maxElemNames = 16

func (st *elemState) remember(name string) {
	if name == "" || slices.Contains(st.names, name) {
		return
	}
	if len(st.names) == maxElemNames {
		st.names = st.names[1:]
	}
	st.names = append(st.names, name)
}

// errRefused marks a request that breaks the rules, as opposed to a failure of nft.
var errRefused = errors.New("refused")

// setManager is the only writer of the ruleset's sets. It validates each request against the
// current [setRules] and applies it with nft, under one lock, so that no request checked against
// old rules lands after new rules revoked what it asks for. It remembers when each element it
// added expires, and refreshes an element only when the request would keep it for noticeably
// longer, so a busy proxy does not run nft for every connection.
type setManager struct {
	nft nftRunner
	now func() time.Time

	mu    sync.Mutex
	rules setRules
	elems map[elemKey]*elemState
}

func newSetManager(nft nftRunner) *setManager {
	return &setManager{nft: nft, now: time.Now, elems: map[elemKey]*elemState{}}
}

// maxTracked bounds the element map; past it, expired entries are pruned.
const maxTracked = 8192

// add validates a request against the current rules and applies it. A refusal wraps
// [errRefused].
func (m *setManager) add(ctx context.Context, r setRequest) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := r.validate(m.rules); err != nil {
		return fmt.Errorf("%w: %w", errRefused, err)
	}
	now := m.now()
	keep := time.Duration(r.Timeout) * time.Second
	var stale []elemKey
	for _, a := range r.Addrs {
		for _, p := range r.Ports {
			k := elemKey{r.Set, a, p}
			// Refresh when less than three quarters of the requested time is left.
			if st := m.elems[k]; st == nil || st.until.Before(now.Add(keep*3/4)) {
				stale = append(stale, k)
			}
		}
	}
	if len(stale) > 0 {
		if _, err := m.nft.run(ctx, setBatch(stale, r.Timeout), "-f", "-"); err != nil {
			return fmt.Errorf("adding to set %s: %w", r.Set, err)
		}
	}
	for _, k := range stale {
		if m.elems[k] == nil {
			m.elems[k] = &elemState{}
		}
		m.elems[k].until = now.Add(keep)
	}
	for _, a := range r.Addrs {
		for _, p := range r.Ports {
			m.elems[elemKey{r.Set, a, p}].remember(r.Name)
		}
	}
	m.prune(now)
	return nil
}

// openFixed adds addrs on port to set for timeout seconds without a request to validate: the
// supervisor's own openings, from the policy it read itself (the host's resolvers).
func (m *setManager) openFixed(ctx context.Context, set string, addrs []netip.Addr, port, timeout int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	keys := make([]elemKey, 0, len(addrs))
	for _, a := range addrs {
		keys = append(keys, elemKey{set, a, port})
	}
	if _, err := m.nft.run(ctx, setBatch(keys, timeout), "-f", "-"); err != nil {
		return fmt.Errorf("adding to set %s: %w", set, err)
	}
	until := m.now().Add(time.Duration(timeout) * time.Second)
	for _, k := range keys {
		if m.elems[k] == nil {
			m.elems[k] = &elemState{}
		}
		m.elems[k].until = until
	}
	return nil
}

func (m *setManager) prune(now time.Time) {
	if len(m.elems) <= maxTracked {
		return
	}
	for k, st := range m.elems {
		if st.until.Before(now) {
			delete(m.elems, k)
		}
	}
}

// setRules replaces the rules and revokes every agent-set element that no name still allowed on
// its port asked for: after `abox egress rm`, an address the agent resolved earlier is closed at
// once instead of when its DNS TTL runs out. If the precise removal fails, the whole agent set is
// flushed (the agent's next lookups open what is still allowed); only if that fails too is the
// error returned, with the elements left in place.
func (m *setManager) setRules(ctx context.Context, rules setRules) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rules = rules
	var gone []elemKey
	for k, st := range m.elems {
		if k.set != policy.SetAgent {
			continue
		}
		st.names = slices.DeleteFunc(st.names, func(n string) bool { return !rules.list.Allows(n, k.port) })
		if len(st.names) == 0 {
			gone = append(gone, k)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	slices.SortFunc(gone, func(a, b elemKey) int { return cmp.Or(a.addr.Compare(b.addr), a.port-b.port) })
	_, err := m.nft.run(ctx, deleteBatch(gone), "-f", "-")
	if err == nil {
		for _, k := range gone {
			delete(m.elems, k)
		}
		return nil
	}
	if _, ferr := m.nft.run(ctx, nil, "flush", "set", "inet", policy.Table, policy.SetAgent); ferr != nil {
		return fmt.Errorf("revoking %d elements of set %s: %w; flushing it: %w", len(gone), policy.SetAgent, err, ferr)
	}
	for k := range m.elems {
		if k.set == policy.SetAgent {
			delete(m.elems, k)
		}
	}
	return fmt.Errorf("revoking %d elements of set %s: %w (flushed the set instead)", len(gone), policy.SetAgent, err)
}

// elemList renders elems, which all belong to one set, as an nft element list, each element
// followed by suffix.
func elemList(elems []elemKey, suffix string) string {
	parts := make([]string, len(elems))
	for i, e := range elems {
		parts[i] = fmt.Sprintf("%s . %d%s", e.addr, e.port, suffix)
	}
	return strings.Join(parts, ", ")
}

// deleteBatch renders an nft transaction that removes elems, which all belong to one set, whether
// or not each is still there: nft 1.0.6 has no "destroy" and fails a whole transaction on a
// missing element, so add each with a short timeout first (a no-op if present), then delete it.
func deleteBatch(elems []elemKey) []byte {
	prefix := fmt.Sprintf("element inet %s %s", policy.Table, elems[0].set)
	return fmt.Appendf(nil, "add %s { %s }\ndelete %s { %s }\n", prefix, elemList(elems, " timeout 1s"), prefix, elemList(elems, ""))
}

// setBatch renders an nft transaction that (re)sets the timeout of elems, which all belong to
// one set: nft 1.0.6 cannot change the timeout of an existing element, so delete it as
// [deleteBatch] does and add it again, all at once.
func setBatch(elems []elemKey, timeout int) []byte {
	prefix := fmt.Sprintf("element inet %s %s", policy.Table, elems[0].set)
	return fmt.Appendf(deleteBatch(elems), "add %s { %s }\n", prefix, elemList(elems, fmt.Sprintf(" timeout %ds", timeout)))
}
