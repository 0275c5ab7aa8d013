package manifest

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// commented is a manifest with comments in every place yaml.v3 keeps them.
const commented = `# agentbox.yaml — hand-written
# second header line

version: 1
project: demo # the project
# before profile
profile: default
servers:
  - github # line comment on an item
  # head comment of an item
  - fetch
egress:
  # first host
  - a.example.com # inline a
  - b.example.com
# before mounts
mounts:
  mask: [".env"] # flow list
  watch:
    - Makefile
run:
  permission_mode: plan # careful
  timeout: 600
# foot of the document
`

func mustParseDoc(t *testing.T, data string) *Doc {
	t.Helper()
	d, err := ParseDoc([]byte(data), FileName)
	if err != nil {
		t.Fatalf("ParseDoc(%q) error = %v", data, err)
	}
	return d
}

// mustManifest checks that the edited document is still a valid manifest and returns it.
func mustManifest(t *testing.T, d *Doc) *Manifest {
	t.Helper()
	m, err := d.Manifest(FileName)
	if err != nil {
		t.Fatalf("Doc.Manifest() error = %v\n%s", err, d.Bytes())
	}
	return m
}

// containsAll checks that every line of want appears in got, byte for byte.
func containsAll(t *testing.T, got []byte, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(string(got), w) {
			t.Errorf("Bytes() lacks %q:\n%s", w, got)
		}
	}
}

// keptComments are the lines of commented that every edit below leaves alone.
var keptComments = []string{
	"# agentbox.yaml — hand-written\n# second header line\n",
	"project: demo # the project\n",
	"# before profile\nprofile: default\n",
	"  - github # line comment on an item\n  # head comment of an item\n  - fetch\n",
	"# before mounts\nmounts:\n",
	"  permission_mode: plan # careful\n",
	"# foot of the document\n",
}

func TestDocUntouchedRoundTrip(t *testing.T) {
	d := mustParseDoc(t, commented)
	if got := string(d.Bytes()); got != commented {
		t.Errorf("Bytes() changed an unedited document:\n%s", cmp.Diff(commented, got))
	}
	want, err := Parse([]byte(commented), FileName)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, mustManifest(t, d)); diff != "" {
		t.Errorf("Doc.Manifest() mismatch (-Parse +Doc):\n%s", diff)
	}
}

func TestDocEdits(t *testing.T) {
	tests := []struct {
		name     string
		edit     func(t *testing.T, d *Doc)
		want     []string // lines that must appear after the edit, besides keptComments
		absent   []string // text that must be gone
		setsKept bool     // the edit changes the "key: value" lines of keptComments
		check    func(t *testing.T, m *Manifest)
	}{
		{
			name: "append keeps existing items and their comments",
			edit: func(t *testing.T, d *Doc) {
				if err := d.Append([]string{"c.example.com"}, "egress"); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"egress:\n  # first host\n  - a.example.com # inline a\n  - b.example.com\n  - c.example.com\n"},
			check: func(t *testing.T, m *Manifest) {
				if diff := cmp.Diff([]string{"a.example.com", "b.example.com", "c.example.com"}, m.Egress); diff != "" {
					t.Errorf("Egress mismatch (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "append to a flow list stays a flow list",
			edit: func(t *testing.T, d *Doc) {
				if err := d.Append([]string{".npmrc"}, "mounts", "mask"); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{`  mask: [".env", .npmrc] # flow list` + "\n"},
		},
		{
			name: "append creates a missing list and mapping",
			edit: func(t *testing.T, d *Doc) {
				if err := d.Append([]string{"/srv/docs"}, "mounts", "context"); err != nil {
					t.Fatal(err)
				}
				if err := d.Append([]string{"go", "node"}, "toolchains"); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"  context:\n    - /srv/docs\n", "toolchains:\n  - go\n  - node\n"},
			check: func(t *testing.T, m *Manifest) {
				if diff := cmp.Diff([]string{"go", "node"}, m.Toolchains); diff != "" {
					t.Errorf("Toolchains mismatch (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "appended values that look like other types stay strings",
			edit: func(t *testing.T, d *Doc) {
				if err := d.Append([]string{"true", "123", "null"}, "servers"); err != nil {
					t.Fatal(err)
				}
			},
			check: func(t *testing.T, m *Manifest) {
				if diff := cmp.Diff([]string{"github", "fetch", "true", "123", "null"}, m.Servers); diff != "" {
					t.Errorf("Servers mismatch (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "remove keeps the other items",
			edit: func(t *testing.T, d *Doc) {
				got := d.Remove(func(s string) bool { return s == "b.example.com" }, "egress")
				if diff := cmp.Diff([]string{"b.example.com"}, got); diff != "" {
					t.Errorf("Remove() mismatch (-want +got):\n%s", diff)
				}
			},
			want:   []string{"egress:\n  # first host\n  - a.example.com # inline a\n# before mounts\n"},
			absent: []string{"b.example.com"},
		},
		{
			name: "removing the last item removes the key",
			edit: func(t *testing.T, d *Doc) {
				d.Remove(func(string) bool { return true }, "egress")
				d.Remove(func(string) bool { return true }, "mounts", "watch")
			},
			absent: []string{"egress", "a.example.com", "watch", "Makefile"},
			check: func(t *testing.T, m *Manifest) {
				if m.Egress != nil || m.Mounts.Watch != nil {
					t.Errorf("Egress, Watch = %q, %q, want both gone", m.Egress, m.Mounts.Watch)
				}
			},
		},
		{
			name: "remove of a missing list or item does nothing",
			edit: func(t *testing.T, d *Doc) {
				if got := d.Remove(func(string) bool { return true }, "egress_ignored"); got != nil {
					t.Errorf("Remove(egress_ignored) = %q, want nil", got)
				}
				if got := d.Remove(func(s string) bool { return s == "x" }, "servers"); got != nil {
					t.Errorf("Remove(servers, x) = %q, want nil", got)
				}
			},
			want: []string{"egress:\n  # first host\n  - a.example.com # inline a\n  - b.example.com\n"},
		},
		{
			name: "set keeps the key's line comment",
			edit: func(t *testing.T, d *Doc) {
				if err := d.Set("other", "project"); err != nil {
					t.Fatal(err)
				}
				if err := d.Set(ModeDefault, "run", "permission_mode"); err != nil {
					t.Fatal(err)
				}
			},
			want:     []string{"project: other # the project\n", "  permission_mode: default # careful\n"},
			absent:   []string{"project: demo", "plan"},
			setsKept: true,
		},
		{
			name: "set adds a missing key at the end of its mapping",
			edit: func(t *testing.T, d *Doc) {
				if err := d.Set([]string{"search", "get_issue"}, "tools", "github"); err != nil {
					t.Fatal(err)
				}
				if err := d.Set(true, "run", "connectors"); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"  timeout: 600\n  connectors: true\n", "tools:\n  github:\n    - search\n"},
			check: func(t *testing.T, m *Manifest) {
				if !m.Run.Connectors {
					t.Error("Run.Connectors = false, want true")
				}
			},
		},
		{
			name: "delete removes only that key",
			edit: func(t *testing.T, d *Doc) {
				d.Delete("run", "timeout")
				d.Delete("run", "missing")
				d.Delete("missing", "deeper")
			},
			absent: []string{"timeout"},
			check: func(t *testing.T, m *Manifest) {
				if m.Run.Timeout != DefaultTimeout {
					t.Errorf("Run.Timeout = %d, want the default %d", m.Run.Timeout, DefaultTimeout)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := mustParseDoc(t, commented)
			tc.edit(t, d)
			got := d.Bytes()
			for _, kept := range keptComments {
				if !tc.setsKept || !strings.Contains(kept, ": ") {
					containsAll(t, got, kept)
				}
			}
			containsAll(t, got, tc.want...)
			for _, a := range tc.absent {
				if strings.Contains(string(got), a) {
					t.Errorf("Bytes() still holds %q:\n%s", a, got)
				}
			}
			m := mustManifest(t, d)
			if tc.check != nil {
				tc.check(t, m)
			}
			// The edited bytes parse to the same manifest again.
			again, err := Parse(got, FileName)
			if err != nil {
				t.Fatalf("Parse(Bytes()) error = %v", err)
			}
			if diff := cmp.Diff(m, again); diff != "" {
				t.Errorf("Parse(Bytes()) mismatch (-Doc.Manifest +Parse):\n%s", diff)
			}
		})
	}
}

func TestDocReads(t *testing.T) {
	d := mustParseDoc(t, commented+"tools:\n  github: [search]\n  fetch: [get]\n")
	if diff := cmp.Diff([]string{"a.example.com", "b.example.com"}, d.Strings("egress")); diff != "" {
		t.Errorf("Strings(egress) mismatch (-want +got):\n%s", diff)
	}
	if got := d.Strings("egress_ignored"); got != nil {
		t.Errorf("Strings(egress_ignored) = %q, want nil", got)
	}
	if got := d.Strings("project"); got != nil {
		t.Errorf("Strings(project) = %q, want nil", got)
	}
	if diff := cmp.Diff([]string{"github", "fetch"}, d.Keys("tools")); diff != "" {
		t.Errorf("Keys(tools) mismatch (-want +got):\n%s", diff)
	}
	if got := d.Keys("servers"); got != nil {
		t.Errorf("Keys(servers) = %q, want nil", got)
	}
}

func TestDocDeleteIfEmpty(t *testing.T) {
	d := mustParseDoc(t, base+"mounts:\n  mask: []\n  watch: [Makefile]\ntools: {}\n")
	d.DeleteIfEmpty("mounts", "mask")
	d.DeleteIfEmpty("mounts", "watch")
	d.DeleteIfEmpty("tools")
	d.DeleteIfEmpty("project")
	want := base + "mounts:\n  watch: [Makefile]\n"
	if got := string(d.Bytes()); got != want {
		t.Errorf("Bytes() = %q, want %q", got, want)
	}
}

func TestNewDoc(t *testing.T) {
	m := &Manifest{
		Version: Version, Project: "demo", Profile: "default",
		Servers: []string{"github"}, Egress: []string{"api.example.com"},
		Mounts: Mounts{Mask: []string{".env"}},
		Run:    Run{PermissionMode: ModePlan},
	}
	d, err := NewDoc(m)
	if err != nil {
		t.Fatal(err)
	}
	got := d.Bytes()
	if !strings.HasPrefix(string(got), Header) {
		t.Errorf("Bytes() does not start with Header:\n%s", got)
	}
	for _, absent := range []string{"remote_servers", "tools", "egress_ignored", "env_secrets", "watch", "connectors"} {
		if strings.Contains(string(got), absent) {
			t.Errorf("Bytes() holds the empty field %q:\n%s", absent, got)
		}
	}
	if diff := cmp.Diff(m.WithDefaults(), *mustManifest(t, d)); diff != "" {
		t.Errorf("NewDoc(m).Manifest() mismatch (-want +got):\n%s", diff)
	}
	// The header survives a parse and an edit.
	d2 := mustParseDoc(t, string(got))
	if err := d2.Append([]string{"b.example.com"}, "egress"); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(d2.Bytes()), Header) {
		t.Errorf("edited Bytes() lost the header:\n%s", d2.Bytes())
	}
}

func TestParseDocRefuses(t *testing.T) {
	tests := []struct {
		name, data, want string
	}{
		{"empty", "", "agentbox.yaml: file: is empty"},
		{"only comments", "# nothing\n", "agentbox.yaml: file: is empty"},
		{"sequence", "- a\n", "agentbox.yaml: line 1: cannot unmarshal !!seq into manifest.Manifest"},
		{"null document", "null\n", "agentbox.yaml: file: is not a YAML mapping"},
		{"unknown key", base + "egres: [a.example.com]\n", `agentbox.yaml: line 3: "egres" is not a known key`},
		{"two documents", base + "---\n" + base, "agentbox.yaml: file: holds more than one YAML document"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseDoc([]byte(tc.data), FileName)
			if err == nil || err.Error() != tc.want {
				t.Errorf("ParseDoc(%q) error = %v, want %q", tc.data, err, tc.want)
			}
		})
	}
}

// TestDocAliases: an edit reached through a YAML alias, or of an anchored value, changes that
// field only, and never drops what the alias stood for.
func TestDocAliases(t *testing.T) {
	const shared = base + "mounts:\n  watch: &w [Makefile, .github/workflows]\n  mask: *w # same as watch\n"
	tests := []struct {
		name      string
		edit      func(*Doc)
		mask      []string
		watch     []string
		wantBytes string
	}{
		{
			name:  "read through an alias",
			edit:  func(*Doc) {},
			mask:  []string{"Makefile", ".github/workflows"},
			watch: []string{"Makefile", ".github/workflows"},
		},
		{
			name:  "append through an alias",
			edit:  func(d *Doc) { d.Append([]string{".env"}, "mounts", "mask") },
			mask:  []string{"Makefile", ".github/workflows", ".env"},
			watch: []string{"Makefile", ".github/workflows"},
		},
		{
			name:  "append to the anchored list",
			edit:  func(d *Doc) { d.Append([]string{"justfile"}, "mounts", "watch") },
			mask:  []string{"Makefile", ".github/workflows"},
			watch: []string{"Makefile", ".github/workflows", "justfile"},
		},
		{
			name:  "remove from the anchored list",
			edit:  func(d *Doc) { d.Remove(func(s string) bool { return s == "Makefile" }, "mounts", "watch") },
			mask:  []string{"Makefile", ".github/workflows"},
			watch: []string{".github/workflows"},
		},
		{
			name:  "set the anchored value",
			edit:  func(d *Doc) { d.Set([]string{"justfile"}, "mounts", "watch") },
			mask:  []string{"Makefile", ".github/workflows"},
			watch: []string{"justfile"},
		},
		{
			name:  "delete the anchored value",
			edit:  func(d *Doc) { d.Delete("mounts", "watch") },
			mask:  []string{"Makefile", ".github/workflows"},
			watch: nil,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := mustParseDoc(t, shared)
			tc.edit(d)
			m := mustManifest(t, d)
			if diff := cmp.Diff(tc.mask, m.Mounts.Mask); diff != "" {
				t.Errorf("Mask mismatch (-want +got):\n%s\n%s", diff, d.Bytes())
			}
			if diff := cmp.Diff(tc.watch, m.Mounts.Watch); diff != "" {
				t.Errorf("Watch mismatch (-want +got):\n%s\n%s", diff, d.Bytes())
			}
			if diff := cmp.Diff(tc.mask, d.Strings("mounts", "mask")); diff != "" {
				t.Errorf("Strings(mounts, mask) mismatch (-want +got):\n%s", diff)
			}
			if !strings.Contains(string(d.Bytes()), "# same as watch") {
				t.Errorf("Bytes() lost the comment of the alias:\n%s", d.Bytes())
			}
		})
	}
}

// TestDocNulls: empty (null) values keep their meaning through Bytes, in flow and block style.
func TestDocNulls(t *testing.T) {
	tests := []struct {
		name, data, want string
	}{
		{"flow key without value", base + "run: {timeout}\n", base + "run: {timeout: null}\n"},
		{"flow key with empty value", base + "run: {timeout: , output: text}\n", base + "run: {timeout: null, output: text}\n"},
		{"flow list of maps", base + "remote_servers: {r: {url: 'https://r.example.com', secrets: [{name: a, env: A, }], description: }}\n",
			base + "remote_servers: {r: {url: 'https://r.example.com', secrets: [{name: a, env: A}], description: null}}\n"},
		{"block empty value", base + "run:\n  timeout:\n  output: text\n", base + "run:\n  timeout:\n  output: text\n"},
		{"block empty list", base + "egress:\nmounts:\n  mask:\n", base + "egress:\nmounts:\n  mask:\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := mustParseDoc(t, tc.data)
			if got := string(d.Bytes()); got != tc.want {
				t.Errorf("Bytes() = %q, want %q", got, tc.want)
			}
			want, err := Parse([]byte(tc.data), FileName)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, mustManifest(t, d)); diff != "" {
				t.Errorf("Doc.Manifest() mismatch (-Parse +Doc):\n%s", diff)
			}
		})
	}
}
