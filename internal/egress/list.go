package egress

import (
	"slices"
	"sort"
)

// List is a set of entries with the default ports that entries without a port are allowed on.
// The zero List allows nothing. A List is immutable after [NewList] and safe for concurrent use.
type List struct {
	entries  []Entry
	defaults []int
	exact    map[string][]int // host -> sorted ports
	wild     map[string][]int // wildcard base -> sorted ports
	withheld map[string]bool  // names no entry covers, whatever it says ([List.Without])
}

// NewList builds a list from entries. defaultPorts are the ports an entry without a port is
// allowed on; nil means [DefaultPort] only. Duplicate entries are removed.
func NewList(entries []Entry, defaultPorts []int) *List {
	if len(defaultPorts) == 0 {
		defaultPorts = []int{DefaultPort}
	}
	l := &List{
		defaults: sortedUnique(defaultPorts),
		exact:    map[string][]int{},
		wild:     map[string][]int{},
	}
	seen := map[Entry]bool{}
	for _, e := range entries {
		if seen[e] {
			continue
		}
		seen[e] = true
		l.entries = append(l.entries, e)
		ports := []int{e.Port}
		if e.Port == 0 {
			ports = l.defaults
		}
		m := l.exact
		if e.Wildcard {
			m = l.wild
		}
		m[e.Host] = sortedUnique(append(m[e.Host], ports...))
	}
	return l
}

// ParseList parses each string with [Parse] and builds a [List]. It stops at the first error.
func ParseList(items []string, defaultPorts []int) (*List, error) {
	entries := make([]Entry, 0, len(items))
	for _, s := range items {
		e, err := Parse(s)
		if err != nil {
			return nil, err
		}
		entries = append(entries, e)
	}
	return NewList(entries, defaultPorts), nil
}

// Entries returns the entries in the order they were given, without duplicates.
func (l *List) Entries() []Entry { return slices.Clone(l.entries) }

// DefaultPorts returns the ports an entry without a port is allowed on.
func (l *List) DefaultPorts() []int { return slices.Clone(l.defaults) }

// Len is the number of distinct entries.
func (l *List) Len() int { return len(l.entries) }

// Ports returns the sorted ports on which name may be reached, or nil if it may not be reached at
// all. name is normalised first; an invalid name gets nil.
func (l *List) Ports(name string) []int {
	if l == nil {
		return nil
	}
	n, ok := NormalizeName(name)
	if !ok || l.withheld[n] {
		return nil
	}
	var ports []int
	ports = append(ports, l.exact[n]...)
	// Every proper suffix of n that is itself a name is a candidate wildcard base.
	for i := 0; i < len(n); i++ {
		if n[i] == '.' {
			ports = append(ports, l.wild[n[i+1:]]...)
		}
	}
	if len(ports) == 0 {
		return nil
	}
	return sortedUnique(ports)
}

// Without returns a copy of the list that allows none of names, whatever its entries say: an
// exact entry for one, a wildcard covering it. Entries and the other names are unchanged.
func (l *List) Without(names ...string) *List {
	out := *l
	out.withheld = map[string]bool{}
	for n := range l.withheld {
		out.withheld[n] = true
	}
	for _, name := range names {
		if n, ok := NormalizeName(name); ok {
			out.withheld[n] = true
		}
	}
	return &out
}

// AllowsName reports whether name may be resolved: some entry covers it on some port.
func (l *List) AllowsName(name string) bool { return len(l.Ports(name)) > 0 }

// Allows reports whether a connection to name on port is allowed.
func (l *List) Allows(name string, port int) bool {
	return slices.Contains(l.Ports(name), port)
}

func sortedUnique(p []int) []int {
	out := slices.Clone(p)
	sort.Ints(out)
	return slices.Compact(out)
}
