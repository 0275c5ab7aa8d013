package manifest

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/aboxhq/abox/internal/egress"
	"github.com/aboxhq/abox/internal/termtext"
)

// fuzzSeeds are added to the corpus checked into testdata/fuzz/FuzzParse.
var fuzzSeeds = []string{
	base,
	base + "egress: [a.example.com, '*.b.example.com', 'c.example.com:22']\negress_ignored: [d.example.com]\n",
	base + "remote_servers: {r: {url: 'https://r.example.com/mcp', headers: {A: '${T}'}, secrets: [{name: t, env: T}]}}\n",
	base + "servers: [s]\ntools: {s: [a, b]}\nserver_network: {s: none}\nenv_secrets: {TOKEN: s.t}\n",
	base + "mounts: {mask: [.env], watch: [Makefile], context: [~/x]}\nrun: {permission_mode: plan, timeout: 60}\n",
	base + "mounts:\n  watch: &w [Makefile]\n  mask: *w\n",
	base + "egress: [\"exa mple.com\", \"ex\\u0430mple.com\", \"a\\u202eb.com\"]\n",
	base + "env_secrets: {\"A\\e[31m\": s}\n",
	"project: a\nprofile: b\n---\nproject: c\n",
	"# only a comment\n",
	"- a\n",
}

// FuzzParse checks that Parse never panics; that a refusal is an *Error whose every problem is
// printable; that an accepted manifest holds only printable ASCII, valid names and egress
// entries egress.Parse accepts; and that the Doc and NewDoc round trips agree with Parse.
func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(data, FileName)
		d, derr := ParseDoc(data, FileName)
		if err != nil {
			checkProblems(t, data, err)
			if derr == nil {
				if dm, err := d.Manifest(FileName); err == nil {
					t.Fatalf("Parse(%q) failed but ParseDoc().Manifest() = %+v", data, dm)
				}
			}
			return
		}
		checkAccepted(t, data, m)
		if derr != nil {
			t.Fatalf("Parse(%q) succeeded but ParseDoc() error = %v", data, derr)
		}
		dm, err := d.Manifest(FileName)
		if err != nil {
			t.Fatalf("ParseDoc(%q).Manifest() error = %v\nBytes() = %q", data, err, d.Bytes())
		}
		if diff := cmp.Diff(m, dm); diff != "" {
			t.Fatalf("ParseDoc(%q).Manifest() mismatch (-Parse +Doc):\n%s\nBytes() = %q", data, diff, d.Bytes())
		}
		nd, err := NewDoc(m)
		if err != nil {
			t.Fatalf("NewDoc(Parse(%q)) error = %v", data, err)
		}
		nm, err := nd.Manifest(FileName)
		if err != nil {
			t.Fatalf("NewDoc(Parse(%q)).Manifest() error = %v\nBytes() = %q", data, err, nd.Bytes())
		}
		// NewDoc omits empty lists and maps, so they come back nil.
		if diff := cmp.Diff(m, nm, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("NewDoc(Parse(%q)).Manifest() mismatch (-Parse +NewDoc):\n%s", data, diff)
		}
	})
}

func checkProblems(t *testing.T, data []byte, err error) {
	t.Helper()
	var me *Error
	if !errors.As(err, &me) {
		t.Fatalf("Parse(%q) error = %T %v, want *Error", data, err, err)
	}
	if len(me.Problems) == 0 {
		t.Fatalf("Parse(%q) error has no problems", data)
	}
	for _, p := range me.Problems {
		if p.Loc == "" || p.Msg == "" {
			t.Fatalf("Parse(%q) problem %+v lacks a location or message", data, p)
		}
		for _, s := range []string{p.Loc, p.Msg, p.Hint} {
			if termtext.Line(s) != s {
				t.Fatalf("Parse(%q) problem %+v is not printable", data, p)
			}
		}
	}
}

func checkAccepted(t *testing.T, data []byte, m *Manifest) {
	t.Helper()
	if !IsProjectName(m.Project) || !IsProjectName(m.Profile) {
		t.Fatalf("Parse(%q) accepted project %q, profile %q", data, m.Project, m.Profile)
	}
	for _, h := range append(append([]string{}, m.Egress...), m.EgressIgnored...) {
		if _, err := egress.Parse(h); err != nil {
			t.Fatalf("Parse(%q) accepted egress entry %q: %v", data, h, err)
		}
	}
	walkStrings(reflect.ValueOf(m), func(s string) {
		if i := strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r > 0x7e }); i >= 0 {
			t.Fatalf("Parse(%q) accepted %q, which holds %q", data, s, s[i:])
		}
	})
}

// walkStrings calls fn with every string in v: fields, elements, map keys and values.
func walkStrings(v reflect.Value, fn func(string)) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walkStrings(v.Elem(), fn)
		}
	case reflect.String:
		fn(v.String())
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			walkStrings(v.Field(i), fn)
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			walkStrings(v.Index(i), fn)
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			walkStrings(it.Key(), fn)
			walkStrings(it.Value(), fn)
		}
	}
}

func TestWalkStrings(t *testing.T) {
	m := &Manifest{Project: "p", Servers: []string{"s"}, EnvSecrets: map[string]string{"K": "v"},
		RemoteServers: map[string]RemoteServer{"r": {URL: "u", Secrets: []SecretEnv{{Name: "n", Env: "e"}}}}}
	var got []string
	walkStrings(reflect.ValueOf(m), func(s string) {
		if s != "" {
			got = append(got, s)
		}
	})
	want := []string{"p", "s", "r", "u", "n", "e", "K", "v"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("walkStrings mismatch (-want +got):\n%s", diff)
	}
}
