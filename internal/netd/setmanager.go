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
//
// It also keeps the sets from being filled: requests are refused (and the refusal reported to
// the child, which logs it) once a set holds [maxLive] elements added on request, or once one
// name holds [maxPerName] addresses in a set. The kernel's sets hold [policy] 65,536 elements,
// so the supervisor's own fixed openings (the host's resolvers, the gateway) always fit, and
// nothing the agent can make netd resolve ever crowds them out.
type setManager struct {
	nft nftRunner
	now func() time.Time

	mu       sync.Mutex
	rules    setRules
	reserved reserved // never opened on request, whatever the name
	elems    map[elemKey]*elemState
	fixed    map[elemKey]bool // the supervisor's own openings: not counted, never revoked
	revoked  map[elemKey]bool // in policy.SetRevoked
}

func newSetManager(nft nftRunner) *setManager {
	return &setManager{nft: nft, now: time.Now, elems: map[elemKey]*elemState{}, fixed: map[elemKey]bool{},
		revoked: map[elemKey]bool{}}
}

// Budgets of the elements added on request.
const (
	maxLive    = 8192 // per set, unexpired
	maxPerName = 64   // per name and set, unexpired
)

// allows reports whether the current rules' allowlist allows name on port.
func (m *setManager) allows(name string, port int) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rules.list != nil && m.rules.list.Allows(name, port)
}

// setReserved replaces the addresses no request may open.
func (m *setManager) setReserved(r reserved) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reserved = r
}

// add validates a request against the current rules and applies it. A refusal wraps
// [errRefused].
func (m *setManager) add(ctx context.Context, r setRequest) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := r.validate(m.rules); err != nil {
		return fmt.Errorf("%w: %w", errRefused, err)
	}
	for _, a := range r.Addrs {
		if err := m.reserved.check(a); err != nil {
			return fmt.Errorf("%w: %w", errRefused, err)
		}
	}
	now := m.now()
	if err := m.withinBudget(r, now); err != nil {
		return fmt.Errorf("%w: %w", errRefused, err)
	}
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
		batch := append(m.unrevoke(stale), setBatch(stale, r.Timeout)...)
		if _, err := m.nft.run(ctx, batch, "-f", "-"); err != nil {
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
	return nil
}

// withinBudget refuses a request that would take its set past [maxLive] unexpired elements, or
// its name past [maxPerName] addresses in the set. Expired elements are forgotten on the way.
func (m *setManager) withinBudget(r setRequest, now time.Time) error {
	live, perName := 0, map[netip.Addr]bool{}
	for k, st := range m.elems {
		if !st.until.After(now) {
			delete(m.elems, k)
			continue
		}
		if k.set != r.Set {
			continue
		}
		live++
		if r.Name != "" && slices.Contains(st.names, r.Name) {
			perName[k.addr] = true
		}
	}
	added := 0
	for _, a := range r.Addrs {
		for _, p := range r.Ports {
			if m.elems[elemKey{r.Set, a, p}] == nil {
				added++
			}
		}
		if r.Name != "" {
			perName[a] = true
		}
	}
	if live+added > maxLive {
		return fmt.Errorf("set %s is at its budget of %d elements", r.Set, maxLive)
	}
	if len(perName) > maxPerName {
		return fmt.Errorf("%s would hold %d addresses in set %s, more than %d", r.Name, len(perName), r.Set, maxPerName)
	}
	return nil
}

// openFixed adds addrs on port to set, for as long as netd runs, without a request to validate:
// the supervisor's own openings, from what it read itself (the host's resolvers, the gateway's
// address abox gave it). They count against no budget and are never revoked.
func (m *setManager) openFixed(ctx context.Context, set string, addrs []netip.Addr, port int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var keys []elemKey
	for _, a := range addrs {
		if k := (elemKey{set, a, port}); !m.fixed[k] {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	if _, err := m.nft.run(ctx, setBatch(keys, 0), "-f", "-"); err != nil {
		return fmt.Errorf("adding to set %s: %w", set, err)
	}
	for _, k := range keys {
		m.fixed[k] = true
		delete(m.elems, k)
	}
	return nil
}

// setRules replaces the rules and revokes every element of the agent-facing sets ([agentFacing])
// that no name still allowed on its port asked for: after `abox egress rm`, an address the agent
// resolved earlier is closed at once instead of when its DNS TTL runs out, and it moves to
// [policy.SetRevoked], where the ruleset resets the agent's connections to it that are already
// established (conntrack would let them run on). If the precise removal fails, the sets are
// flushed and everything they held is revoked (the agent's next lookups open what is still
// allowed); only if that fails too is the error returned, with the elements left in place.
func (m *setManager) setRules(ctx context.Context, rules setRules) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rules = rules
	var gone, all []elemKey
	for k, st := range m.elems {
		if !agentFacing(k.set) {
			continue
		}
		all = append(all, k)
		st.names = slices.DeleteFunc(st.names, func(n string) bool { return !rules.list.Allows(n, k.port) })
		if len(st.names) == 0 {
			gone = append(gone, k)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	sortKeys(gone)
	batch := revokeBatch(gone)
	for _, set := range splitBySet(gone) {
		batch = append(deleteBatch(set), batch...)
	}
	_, err := m.nft.run(ctx, batch, "-f", "-")
	if err == nil {
		m.forget(gone)
		return nil
	}
	sortKeys(all)
	flush := fmt.Appendf(nil, "flush set inet %s %s\nflush set inet %s %s\n", policy.Table, policy.SetAgent, policy.Table, policy.SetTLS)
	if _, ferr := m.nft.run(ctx, append(flush, revokeBatch(all)...), "-f", "-"); ferr != nil {
		return fmt.Errorf("revoking %d elements of the agent's sets: %w; flushing them: %w", len(gone), err, ferr)
	}
	m.forget(all)
	return fmt.Errorf("revoking %d elements of the agent's sets: %w (flushed them instead)", len(gone), err)
}

// splitBySet groups keys by their set, in the order the sets first appear.
func splitBySet(keys []elemKey) [][]elemKey {
	var out [][]elemKey
	at := map[string]int{}
	for _, k := range keys {
		i, ok := at[k.set]
		if !ok {
			i = len(out)
			at[k.set] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], k)
	}
	return out
}

// revokeFlows puts TLS flows the kernel carries into [policy.SetRevokedFlow], where the ruleset
// resets them: their server name is no longer allowed ([tlsGate.revoked]).
func (m *setManager) revokeFlows(ctx context.Context, flows []flowKey) error {
	if len(flows) == 0 {
		return nil
	}
	parts := make([]string, len(flows))
	for i, f := range flows {
		parts[i] = fmt.Sprintf("%s . %d . %s . %d timeout %ds", f.src.Addr(), f.src.Port(), f.dst.Addr(), f.dst.Port(), revokedTimeout)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	_, err := m.nft.run(ctx, fmt.Appendf(nil, "add element inet %s %s { %s }\n", policy.Table, policy.SetRevokedFlow, strings.Join(parts, ", ")), "-f", "-")
	if err != nil {
		return fmt.Errorf("revoking %d tls flows: %w", len(flows), err)
	}
	return nil
}

// revokedTimeout is how long a revoked element keeps resetting established connections: as long
// as a run may last.
const revokedTimeout = maxTimeout

// forget drops revoked elements of the agent's sets from the bookkeeping and remembers them as
// revoked.
func (m *setManager) forget(keys []elemKey) {
	for _, k := range keys {
		delete(m.elems, k)
		m.revoked[elemKey{policy.SetRevoked, k.addr, k.port}] = true
	}
}

// unrevoke returns the transaction that takes the pairs of the agent's sets' keys out of
// [policy.SetRevoked] again (a name still allowed resolved to them), and forgets them there.
func (m *setManager) unrevoke(keys []elemKey) []byte {
	var back []elemKey
	for _, k := range keys {
		rk := elemKey{policy.SetRevoked, k.addr, k.port}
		if agentFacing(k.set) && m.revoked[rk] {
			back = append(back, rk)
			delete(m.revoked, rk)
		}
	}
	if len(back) == 0 {
		return nil
	}
	return deleteBatch(back)
}

// revokeBatch renders the transaction that puts the pairs of keys of the agent's sets into
// [policy.SetRevoked].
func revokeBatch(keys []elemKey) []byte {
	rev := make([]elemKey, len(keys))
	for i, k := range keys {
		rev[i] = elemKey{policy.SetRevoked, k.addr, k.port}
	}
	return setBatch(rev, revokedTimeout)
}

func sortKeys(keys []elemKey) {
	slices.SortFunc(keys, func(a, b elemKey) int { return cmp.Or(a.addr.Compare(b.addr), a.port-b.port) })
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
// [deleteBatch] does and add it again, all at once. Timeout 0 adds them without one: they stay
// until netd ends.
func setBatch(elems []elemKey, timeout int) []byte {
	prefix := fmt.Sprintf("element inet %s %s", policy.Table, elems[0].set)
	suffix := ""
	if timeout > 0 {
		suffix = fmt.Sprintf(" timeout %ds", timeout)
	}
	return fmt.Appendf(deleteBatch(elems), "add %s { %s }\n", prefix, elemList(elems, suffix))
}
