package egress

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func mustList(t *testing.T, items []string, defaultPorts []int) *List {
	t.Helper()
	l, err := ParseList(items, defaultPorts)
	if err != nil {
		t.Fatalf("ParseList(%q) error = %v", items, err)
	}
	return l
}

func TestListPorts(t *testing.T) {
	l := mustList(t, []string{
		"*.allowed.test",
		"exact.test",
		"github.com:22",
		"ssh.example.org:2222",
		"ssh.example.org",
		"SSH.example.org.:22", // same host, another spelling: ports merge
		"*.ports.test:8443",
		"ports.test",
		"*.mixed.test",
		"api.mixed.test:22",
		"*.deep.mixed.test:9000",
	}, nil)
	tests := []struct {
		name string
		want []int
	}{
		{"a.allowed.test", []int{443}},
		{"a.b.allowed.test", []int{443}},
		{"allowed.test", nil},
		{"xallowed.test", nil},
		{"a.xallowed.test", nil},
		{"allowed.test.evil", nil},
		{"exact.test", []int{443}},
		{"a.exact.test", nil}, // exact entries never cover subdomains
		{"github.com", []int{22}},
		{"www.github.com", nil},
		{"ssh.example.org", []int{22, 443, 2222}},
		{"example.org", nil},
		{"x.ports.test", []int{8443}},
		{"ports.test", []int{443}},
		{"mixed.test", nil},
		{"api.mixed.test", []int{22, 443}},        // exact and wildcard merge
		{"x.deep.mixed.test", []int{443, 9000}},   // two wildcards merge
		{"api.deep.mixed.test", []int{443, 9000}}, // api.mixed.test:22 does not reach down
		{"deep.mixed.test", []int{443}},           // *.deep… is strict
		{"a.b.c.deep.mixed.test", []int{443, 9000}},

		// The query side is normalised.
		{"A.Allowed.TEST", []int{443}},
		{"a.allowed.test.", []int{443}},
		{"EXACT.TEST.", []int{443}},
		{"GitHub.COM", []int{22}},

		// Invalid names get nil even when they look covered.
		{"", nil},
		{".", nil},
		{".allowed.test", nil},
		{"..allowed.test", nil},
		{"a..allowed.test", nil},
		{"a.allowed.test..", nil},
		{"exact.test..", nil},
		{"-.allowed.test", nil},
		{"_x.allowed.test", nil},
		{"*.allowed.test", nil},
		{"a.allowed.test:443", nil},
		{"exact.test\x00", nil},
		{"exact.test\n", nil},
		{" exact.test", nil},
		{"еxact.test", nil}, // Cyrillic е
		{"exact．test", nil}, // fullwidth dot
	}
	for _, tc := range tests {
		got := l.Ports(tc.name)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Ports(%q) mismatch (-want +got):\n%s", tc.name, diff)
		}
		if got, want := l.AllowsName(tc.name), tc.want != nil; got != want {
			t.Errorf("AllowsName(%q) = %v, want %v", tc.name, got, want)
		}
		for _, port := range []int{-1, 0, 22, 80, 443, 2222, 8443, 9000, 65535, 65536} {
			if got, want := l.Allows(tc.name, port), slices.Contains(tc.want, port); got != want {
				t.Errorf("Allows(%q, %d) = %v, want %v", tc.name, port, got, want)
			}
		}
	}
}

func TestListDefaultPorts(t *testing.T) {
	tests := []struct {
		name     string
		defaults []int
		wantDef  []int
		host     string // ports of "plain.test"
		wantHost []int
		port     string // ports of "port.test" (entry port.test:22)
		wantPort []int
	}{
		{"nil means 443", nil, []int{443}, "plain.test", []int{443}, "port.test", []int{22}},
		{"empty means 443", []int{}, []int{443}, "plain.test", []int{443}, "port.test", []int{22}},
		{"several, unsorted, duplicated", []int{8443, 443, 8443, 80}, []int{80, 443, 8443},
			"plain.test", []int{80, 443, 8443}, "port.test", []int{22}},
		{"443 not included", []int{8443}, []int{8443}, "plain.test", []int{8443}, "port.test", []int{22}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := mustList(t, []string{"plain.test", "port.test:22"}, tc.defaults)
			if diff := cmp.Diff(tc.wantDef, l.DefaultPorts()); diff != "" {
				t.Errorf("DefaultPorts() mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantHost, l.Ports(tc.host)); diff != "" {
				t.Errorf("Ports(%q) mismatch (-want +got):\n%s", tc.host, diff)
			}
			if diff := cmp.Diff(tc.wantPort, l.Ports(tc.port)); diff != "" {
				t.Errorf("Ports(%q) mismatch (-want +got):\n%s", tc.port, diff)
			}
		})
	}
}

func TestListEntries(t *testing.T) {
	l := mustList(t, []string{"b.test", "*.a.test:22", "B.test.", "b.test:443", "*.A.TEST:22", "c.test"}, nil)
	want := []Entry{
		{Host: "b.test"},
		{Host: "a.test", Wildcard: true, Port: 22},
		{Host: "b.test", Port: 443}, // distinct from b.test: it keeps 443 if the defaults change
		{Host: "c.test"},
	}
	if diff := cmp.Diff(want, l.Entries()); diff != "" {
		t.Errorf("Entries() mismatch (-want +got):\n%s", diff)
	}
	if got := l.Len(); got != len(want) {
		t.Errorf("Len() = %d, want %d", got, len(want))
	}
	if diff := cmp.Diff([]int{443}, l.Ports("b.test")); diff != "" {
		t.Errorf("Ports(%q) mismatch (-want +got):\n%s", "b.test", diff)
	}
}

// The slices a List returns are copies: changing them changes nothing inside.
func TestListReturnsCopies(t *testing.T) {
	defaults := []int{443, 8443}
	l := mustList(t, []string{"a.test", "*.w.test", "b.test:22"}, defaults)
	defaults[0] = 1

	l.Entries()[0] = Entry{Host: "evil.test"}
	l.DefaultPorts()[0] = 1
	for _, name := range []string{"a.test", "x.w.test"} {
		ports := l.Ports(name)
		ports[0] = 1
	}
	l.Ports("b.test")[0] = 1

	if got := l.Entries()[0]; got != (Entry{Host: "a.test"}) {
		t.Errorf("Entries()[0] = %v after changing a copy, want a.test", got)
	}
	if diff := cmp.Diff([]int{443, 8443}, l.DefaultPorts()); diff != "" {
		t.Errorf("DefaultPorts() mismatch (-want +got):\n%s", diff)
	}
	for _, name := range []string{"a.test", "x.w.test"} {
		if diff := cmp.Diff([]int{443, 8443}, l.Ports(name)); diff != "" {
			t.Errorf("Ports(%q) mismatch (-want +got):\n%s", name, diff)
		}
	}
	if diff := cmp.Diff([]int{22}, l.Ports("b.test")); diff != "" {
		t.Errorf("Ports(%q) mismatch (-want +got):\n%s", "b.test", diff)
	}
}

func TestParseListError(t *testing.T) {
	l, err := ParseList([]string{"ok.test", "https://bad.test/x", "localhost"}, nil)
	if l != nil {
		t.Errorf("ParseList returned a list with an error")
	}
	var perr *Error
	if !errors.As(err, &perr) {
		t.Fatalf("ParseList error = %v, want *Error", err)
	}
	if perr.Input != "https://bad.test/x" {
		t.Errorf("ParseList error Input = %q, want the first bad item", perr.Input)
	}
}

func TestEmptyLists(t *testing.T) {
	var zero List
	var nilList *List
	empty := NewList(nil, nil)
	for name, l := range map[string]*List{"zero": &zero, "nil": nilList, "NewList(nil)": empty} {
		if got := l.Ports("example.com"); got != nil {
			t.Errorf("%s: Ports = %v, want nil", name, got)
		}
		if l.AllowsName("example.com") || l.Allows("example.com", 443) {
			t.Errorf("%s: allows example.com", name)
		}
	}
	if zero.Len() != 0 || len(zero.Entries()) != 0 || empty.Len() != 0 {
		t.Errorf("empty lists have entries")
	}
}

// A list of 10 000 entries answers exactly as a small one does.
func TestLargeList(t *testing.T) {
	const n = 10000
	var items []string
	for i := range n {
		switch i % 4 {
		case 0:
			items = append(items, fmt.Sprintf("host%05d.example.test", i))
		case 1:
			items = append(items, fmt.Sprintf("host%05d.example.test:%d", i, 1000+i))
		case 2:
			items = append(items, fmt.Sprintf("*.w%05d.example.test", i))
		case 3:
			items = append(items, fmt.Sprintf("*.W%05d.Example.TEST.:%d", i, 1000+i))
		}
	}
	l := mustList(t, items, nil)
	if got := l.Len(); got != n {
		t.Fatalf("Len() = %d, want %d", got, n)
	}
	check := func(name string, want []int) {
		t.Helper()
		if diff := cmp.Diff(want, l.Ports(name)); diff != "" {
			t.Errorf("Ports(%q) mismatch (-want +got):\n%s", name, diff)
		}
	}
	for i := range n {
		host := fmt.Sprintf("host%05d.example.test", i)
		wild := fmt.Sprintf("w%05d.example.test", i)
		switch i % 4 {
		case 0:
			check(host, []int{443})
			check("HOST"+host[4:]+".", []int{443})
			check("sub."+host, nil)
		case 1:
			check(host, []int{1000 + i})
			check("sub."+host, nil)
		case 2:
			check("a."+wild, []int{443})
			check("a.b."+wild, []int{443})
			check(wild, nil)
			check("x"+wild, nil)
		case 3:
			check("a."+wild, []int{1000 + i})
			check(wild, nil)
		}
	}
	check("host10000.example.test", nil)
	check("example.test", nil)
	check("a.example.test", nil)
	if l.Allows("host00001.example.test", 443) || !l.Allows("host00001.example.test", 1001) {
		t.Errorf("host00001.example.test: port 1001 only")
	}
}

// A List is safe for concurrent use (run with -race).
func TestListConcurrent(t *testing.T) {
	l := mustList(t, []string{"*.allowed.test", "exact.test:22"}, []int{443, 8443})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				name := fmt.Sprintf("h%d-%d.allowed.test", g, i)
				if !l.Allows(name, 8443) || l.Allows("exact.test", 443) || !l.AllowsName("exact.test") {
					t.Errorf("concurrent lookups disagree for %s", name)
					return
				}
				_ = l.Entries()
				_ = l.DefaultPorts()
			}
		})
	}
	wg.Wait()
}
