package secrets

import (
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aboxhq/abox/internal/config"
)

// Listing is one secret of `abox secrets ls`, as --json prints it: where it is, where it comes
// from, and everything that uses it.
type Listing struct {
	Name      string     `json:"name"`
	Stored    bool       `json:"stored"`
	Source    string     `json:"source"`
	Reference string     `json:"reference"`
	SyncedAt  *time.Time `json:"synced_at"`
	UsedBy    []Use      `json:"used_by"`
}

// List is the reverse index as a list: every secret the store holds (stored), secrets.yaml
// maps (cfg), secrets.json records (st) or a registered project uses (x), sorted by name. A
// secret's source is secrets.yaml's when it maps it, else the one recorded at its last sync.
// With unused, only the secrets nothing uses are listed.
func List(stored []string, cfg *config.Secrets, st *State, x *Index, unused bool) []Listing {
	out := []Listing{}
	for _, name := range listNames(stored, cfg.Mappings, st, x) {
		e := Listing{Name: name, Stored: slices.Contains(stored, name), UsedBy: x.UsesOf(name)}
		if e.UsedBy == nil {
			e.UsedBy = []Use{}
		}
		if rec, ok := st.Secrets[name]; ok {
			e.Source, e.Reference, e.SyncedAt = rec.Source, rec.Reference, &rec.SyncedAt
		}
		if mp, ok := cfg.Lookup(name); ok {
			e.Source, e.Reference = mp.Kind(), SourceRef(mp)
		}
		if unused && len(e.UsedBy) > 0 {
			continue
		}
		out = append(out, e)
	}
	return out
}

// listNames is every secret the store holds, secrets.yaml maps, secrets.json records or a
// project uses, sorted.
func listNames(stored []string, mappings []config.SecretMapping, st *State, x *Index) []string {
	set := map[string]bool{}
	for _, n := range stored {
		set[n] = true
	}
	for _, mp := range mappings {
		set[mp.Secret] = true
	}
	for n := range st.Secrets {
		set[n] = true
	}
	for _, n := range x.Secrets() {
		set[n] = true
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Changed returns the secrets of rows whose value the store now holds anew: created or
// updated, which a running gateway does not have yet.
func Changed(rows []Row) []string {
	var out []string
	for _, r := range rows {
		if r.Status == Created || r.Status == Updated {
			out = append(out, r.Secret)
		}
	}
	return out
}

// UsersOf lists who needs secret among needs, once each, for a row's detail.
func UsersOf(needs []Need, secret string) string {
	var out []string
	for _, n := range needs {
		if n.Secret == secret {
			out = append(out, n.String())
		}
	}
	return strings.Join(slices.Compact(out), ", ")
}
