package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/aboxhq/abox/internal/egress"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/termtext"
)

// FuzzConfigParse feeds the same bytes to config.yaml, secrets.yaml and custom-servers.yaml
// parsing. None may panic; a refusal is a *manifest.Error whose problems are printable; an
// accepted file holds no unprintable character. An accepted config.yaml holds only printable
// ASCII, a pinned gateway image, valid profiles and ports and mandatory hosts egress.Parse
// accepts, and survives Marshal and Parse unchanged.
func FuzzConfigParse(f *testing.F) {
	for _, s := range []string{
		"",
		string(Default().Marshal()),
		"profiles: {work: {port: 8812}}\nagent_env: {FOO: '1'}\n",
		"gateway_image: x\n",
		"mappings: [{secret: a, op: 'op://v/i/f'}, {secret: b, source: prompt}]\n",
		"servers: {a: {image: x, pin: false, secrets: [some.token, {name: b, env: B}]}}\n",
		"a: {image: 'x@sha256:" + hex64 + "', tools: ['*']}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data, "config.yaml")
		checkRefusal(t, "Parse", data, err)
		if err == nil {
			checkConfig(t, data, c)
		}
		s, err := ParseSecrets(data, "secrets.yaml")
		checkRefusal(t, "ParseSecrets", data, err)
		if err == nil {
			walkStrings(reflect.ValueOf(s), func(v string) {
				if termtext.Line(v) != v {
					t.Fatalf("ParseSecrets(%q) accepted %q", data, v)
				}
			})
		}
		cs, err := ParseCustomServers(data, "custom-servers.yaml")
		checkRefusal(t, "ParseCustomServers", data, err)
		if err == nil {
			checkASCII(t, "ParseCustomServers", data, cs)
			for name, srv := range cs {
				if !manifest.IsServerName(name) || !IsImageRef(srv.Image) || srv.Pinned() && !IsPinned(srv.Image) {
					t.Fatalf("ParseCustomServers(%q) accepted %q: %+v", data, name, srv)
				}
			}
		}
	})
}

func checkRefusal(t *testing.T, fn string, data []byte, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var me *manifest.Error
	if !errors.As(err, &me) || len(me.Problems) == 0 {
		t.Fatalf("%s(%q) error = %T %v, want *manifest.Error with problems", fn, data, err, err)
	}
	for _, p := range me.Problems {
		for _, s := range []string{p.Loc, p.Msg, p.Hint} {
			if termtext.Line(s) != s {
				t.Fatalf("%s(%q) problem %+v is not printable", fn, data, p)
			}
		}
	}
}

func checkConfig(t *testing.T, data []byte, c *Config) {
	t.Helper()
	checkASCII(t, "Parse", data, c)
	if !IsPinned(c.Gateway.Image) {
		t.Fatalf("Parse(%q) accepted gateway image %q", data, c.Gateway.Image)
	}
	for name, p := range c.Profiles {
		if !manifest.IsProjectName(name) || p.Port < 1024 || p.Port > 65535 {
			t.Fatalf("Parse(%q) accepted profile %q: %+v", data, name, p)
		}
	}
	for _, port := range c.EgressPorts {
		if port < 1 || port > 65535 {
			t.Fatalf("Parse(%q) accepted egress port %d", data, port)
		}
	}
	for _, h := range c.Defaults.EgressMandatory {
		if _, err := egress.Parse(h); err != nil {
			t.Fatalf("Parse(%q) accepted mandatory host %q: %v", data, h, err)
		}
	}
	again, err := Parse(c.Marshal(), "config.yaml")
	if err != nil {
		t.Fatalf("Parse(Parse(%q).Marshal()) error = %v\n%s", data, err, c.Marshal())
	}
	// A null list comes back empty: that is the same configuration.
	if diff := cmp.Diff(c, again, cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("Parse(Parse(%q).Marshal()) mismatch (-first +second):\n%s", data, diff)
	}
}

// checkASCII fails if any string in v, map keys included, is not printable ASCII.
func checkASCII(t *testing.T, fn string, data []byte, v any) {
	t.Helper()
	walkStrings(reflect.ValueOf(v), func(s string) {
		if i := strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r > 0x7e }); i >= 0 {
			t.Fatalf("%s(%q) accepted %q, which holds %q", fn, data, s, s[i:])
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
