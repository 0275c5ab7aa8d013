package manifest

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// edited is the document the edit tests start from: comments in the places yaml.v3 keeps them,
// and a field of every kind the edits touch.
const edited = `# hand-written
version: 1
project: demo # the project
profile: default
servers:
  - github # the code host
tools:
  github: [get_issue]
server_network:
  github: shared
egress:
  # package hosts
  - Registry.Example.com # mixed case, as a person writes it
  - b.example.com
egress_ignored:
  - tracker.example.com
env_secrets:
  API_KEY: acme.api_key
run:
  permission_mode: plan # careful
`

// TestDocEditMethods applies each edit to edited and compares the whole result with a document
// written out by hand: what the edit must change, and that it changes nothing else.
func TestDocEditMethods(t *testing.T) {
	tests := []struct {
		name string
		edit func(d *Doc) (any, error) // returns what the method reports
		ret  any                       // the report wanted
		want string
	}{
		{
			name: "allow appends the missing hosts and unignores them",
			edit: func(d *Doc) (any, error) {
				return d.AllowEgress([]string{"registry.example.com", "tracker.example.com", "c.example.com:8443"})
			},
			ret: []string{"tracker.example.com", "c.example.com:8443"},
			want: `# hand-written
version: 1
project: demo # the project
profile: default
servers:
  - github # the code host
tools:
  github: [get_issue]
server_network:
  github: shared
egress:
  # package hosts
  - Registry.Example.com # mixed case, as a person writes it
  - b.example.com
  - tracker.example.com
  - c.example.com:8443
env_secrets:
  API_KEY: acme.api_key
run:
  permission_mode: plan # careful
`,
		},
		{
			name: "allow of hosts all there changes nothing",
			edit: func(d *Doc) (any, error) { return d.AllowEgress([]string{"registry.example.com", "b.example.com"}) },
			ret:  []string(nil),
			want: edited,
		},
		{
			name: "remove matches canonically and reports what was written",
			edit: func(d *Doc) (any, error) {
				return d.RemoveEgress([]string{"registry.example.com", "absent.example.com"}), nil
			},
			ret: []string{"Registry.Example.com"},
			// The comment above the removed item goes with it.
			want: `# hand-written
version: 1
project: demo # the project
profile: default
servers:
  - github # the code host
tools:
  github: [get_issue]
server_network:
  github: shared
egress:
  - b.example.com
egress_ignored:
  - tracker.example.com
env_secrets:
  API_KEY: acme.api_key
run:
  permission_mode: plan # careful
`,
		},
		{
			name: "removing every host removes the key",
			edit: func(d *Doc) (any, error) {
				return d.RemoveEgress([]string{"registry.example.com", "b.example.com"}), nil
			},
			ret: []string{"Registry.Example.com", "b.example.com"},
			want: `# hand-written
version: 1
project: demo # the project
profile: default
servers:
  - github # the code host
tools:
  github: [get_issue]
server_network:
  github: shared
egress_ignored:
  - tracker.example.com
env_secrets:
  API_KEY: acme.api_key
run:
  permission_mode: plan # careful
`,
		},
		{
			name: "ignore blocks the host and records the decision once",
			edit: func(d *Doc) (any, error) {
				return nil, d.IgnoreEgress([]string{"b.example.com", "tracker.example.com"})
			},
			want: `# hand-written
version: 1
project: demo # the project
profile: default
servers:
  - github # the code host
tools:
  github: [get_issue]
server_network:
  github: shared
egress:
  # package hosts
  - Registry.Example.com # mixed case, as a person writes it
egress_ignored:
  - tracker.example.com
  - b.example.com
env_secrets:
  API_KEY: acme.api_key
run:
  permission_mode: plan # careful
`,
		},
		{
			name: "unignore forgets the decision",
			edit: func(d *Doc) (any, error) {
				return d.UnignoreEgress([]string{"tracker.example.com", "b.example.com"}), nil
			},
			ret: []string{"tracker.example.com"},
			want: `# hand-written
version: 1
project: demo # the project
profile: default
servers:
  - github # the code host
tools:
  github: [get_issue]
server_network:
  github: shared
egress:
  # package hosts
  - Registry.Example.com # mixed case, as a person writes it
  - b.example.com
env_secrets:
  API_KEY: acme.api_key
run:
  permission_mode: plan # careful
`,
		},
		{
			name: "declare a server with tools",
			edit: func(d *Doc) (any, error) { return nil, d.DeclareServer("fetch", []string{"fetch", "head"}) },
			want: `# hand-written
version: 1
project: demo # the project
profile: default
servers:
  - github # the code host
  - fetch
tools:
  github: [get_issue]
  fetch:
    - fetch
    - head
server_network:
  github: shared
egress:
  # package hosts
  - Registry.Example.com # mixed case, as a person writes it
  - b.example.com
egress_ignored:
  - tracker.example.com
env_secrets:
  API_KEY: acme.api_key
run:
  permission_mode: plan # careful
`,
		},
		{
			name: "declaring a declared server again narrows it and adds no duplicate",
			edit: func(d *Doc) (any, error) { return nil, d.DeclareServer("github", []string{"list_prs"}) },
			want: `# hand-written
version: 1
project: demo # the project
profile: default
servers:
  - github # the code host
tools:
  github:
    - list_prs
server_network:
  github: shared
egress:
  # package hosts
  - Registry.Example.com # mixed case, as a person writes it
  - b.example.com
egress_ignored:
  - tracker.example.com
env_secrets:
  API_KEY: acme.api_key
run:
  permission_mode: plan # careful
`,
		},
		{
			name: "undeclare removes the server's tools and network with it",
			edit: func(d *Doc) (any, error) { d.UndeclareServer("github"); return nil, nil },
			want: `# hand-written
version: 1
project: demo # the project
profile: default
egress:
  # package hosts
  - Registry.Example.com # mixed case, as a person writes it
  - b.example.com
egress_ignored:
  - tracker.example.com
env_secrets:
  API_KEY: acme.api_key
run:
  permission_mode: plan # careful
`,
		},
		{
			name: "set and remove a remote server",
			edit: func(d *Doc) (any, error) {
				if err := d.SetRemoteServer("docs", RemoteServer{URL: "https://mcp.example.com/mcp", Transport: "sse"}); err != nil {
					return nil, err
				}
				if err := d.SetRemoteServer("wiki", RemoteServer{URL: "https://wiki.example.com/mcp"}); err != nil {
					return nil, err
				}
				if err := d.NarrowServer("wiki", []string{"search"}); err != nil {
					return nil, err
				}
				d.RemoveRemoteServer("wiki") // and its narrowing with it

				return nil, nil
			},
			want: `# hand-written
version: 1
project: demo # the project
profile: default
servers:
  - github # the code host
tools:
  github: [get_issue]
server_network:
  github: shared
egress:
  # package hosts
  - Registry.Example.com # mixed case, as a person writes it
  - b.example.com
egress_ignored:
  - tracker.example.com
env_secrets:
  API_KEY: acme.api_key
run:
  permission_mode: plan # careful
remote_servers:
  docs:
    url: https://mcp.example.com/mcp
    transport: sse
`,
		},
		{
			name: "attach and detach secrets",
			edit: func(d *Doc) (any, error) {
				if err := d.AttachSecret("DB_URL", "acme.db"); err != nil {
					return nil, err
				}
				d.DetachSecrets("API_KEY", "NOT_ATTACHED")
				return nil, nil
			},
			want: `# hand-written
version: 1
project: demo # the project
profile: default
servers:
  - github # the code host
tools:
  github: [get_issue]
server_network:
  github: shared
egress:
  # package hosts
  - Registry.Example.com # mixed case, as a person writes it
  - b.example.com
egress_ignored:
  - tracker.example.com
env_secrets:
  DB_URL: acme.db
run:
  permission_mode: plan # careful
`,
		},
		{
			name: "detaching the last secret removes the key",
			edit: func(d *Doc) (any, error) { d.DetachSecrets("API_KEY"); return nil, nil },
			want: `# hand-written
version: 1
project: demo # the project
profile: default
servers:
  - github # the code host
tools:
  github: [get_issue]
server_network:
  github: shared
egress:
  # package hosts
  - Registry.Example.com # mixed case, as a person writes it
  - b.example.com
egress_ignored:
  - tracker.example.com
run:
  permission_mode: plan # careful
`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := mustParseDoc(t, edited)
			ret, err := tc.edit(d)
			if err != nil {
				t.Fatalf("edit error = %v", err)
			}
			if diff := cmp.Diff(tc.ret, ret); diff != "" {
				t.Errorf("edit returned a different report (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, string(d.Bytes())); diff != "" {
				t.Errorf("edited document mismatch (-want +got):\n%s", diff)
			}
			mustManifest(t, d)
		})
	}
}

func TestDocEgressIgnored(t *testing.T) {
	d := mustParseDoc(t, edited)
	got := d.EgressIgnored([]string{"b.example.com", "Tracker.Example.com", "tracker.example.com"})
	if diff := cmp.Diff([]string{"Tracker.Example.com", "tracker.example.com"}, got); diff != "" {
		t.Errorf("EgressIgnored mismatch (-want +got):\n%s", diff)
	}
}

// TestDocRemoveEgressHosts: a host in an entry (in any spelling) is removed; one in none is
// mandatory or absent, as the caller's policy says; the document keeps the mandatory one out.
func TestDocRemoveEgressHosts(t *testing.T) {
	d := mustParseDoc(t, edited)
	mandatory := func(h string) bool { return h == "api.anthropic.com" }
	got := d.RemoveEgressHosts([]string{"registry.example.com", "api.anthropic.com", "c.example.com"}, mandatory)
	want := EgressRemoval{Removed: []string{"Registry.Example.com"}, Mandatory: []string{"api.anthropic.com"}, Absent: []string{"c.example.com"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("RemoveEgressHosts mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"b.example.com"}, d.Strings("egress")); diff != "" {
		t.Errorf("egress after the removal (-want +got):\n%s", diff)
	}
	// A mandatory host that is also written in egress is removed from the manifest like any.
	d = mustParseDoc(t, edited)
	got = d.RemoveEgressHosts([]string{"b.example.com"}, func(string) bool { return true })
	if diff := cmp.Diff(EgressRemoval{Removed: []string{"b.example.com"}}, got); diff != "" {
		t.Errorf("RemoveEgressHosts of a written mandatory host (-want +got):\n%s", diff)
	}
}

// TestDocIgnoreEgressHosts: mandatory hosts are kept out of egress_ignored and reported apart;
// the others are ignored and leave egress.
func TestDocIgnoreEgressHosts(t *testing.T) {
	d := mustParseDoc(t, edited)
	mandatory := func(h string) bool { return h == "api.anthropic.com" }
	ignored, kept, err := d.IgnoreEgressHosts([]string{"b.example.com", "api.anthropic.com"}, mandatory)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"b.example.com"}, ignored); diff != "" {
		t.Errorf("ignored (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"api.anthropic.com"}, kept); diff != "" {
		t.Errorf("kept (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"tracker.example.com", "b.example.com"}, d.Strings("egress_ignored")); diff != "" {
		t.Errorf("egress_ignored (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"Registry.Example.com"}, d.Strings("egress")); diff != "" {
		t.Errorf("egress (-want +got):\n%s", diff)
	}
	// Only mandatory hosts: nothing is written.
	d = mustParseDoc(t, edited)
	before := string(d.Bytes())
	if ignored, _, err := d.IgnoreEgressHosts([]string{"api.anthropic.com"}, mandatory); err != nil || ignored != nil {
		t.Fatalf("IgnoreEgressHosts(mandatory only) = %v, %v", ignored, err)
	}
	if got := string(d.Bytes()); got != before {
		t.Errorf("the document changed:\n%s", got)
	}
}

// TestDocMerge is `abox init` run again in a project: what the answers add is merged in, and
// the hand-written rest is kept.
func TestDocMerge(t *testing.T) {
	d := mustParseDoc(t, edited)
	want := &Manifest{
		Project: "demo", Profile: "work",
		Servers:    []string{"github", "fetch"},
		Toolchains: []string{"go"},
		Egress:     []string{"registry.example.com", "proxy.example.com"},
		Mounts:     Mounts{Mask: []string{".env"}, Context: []string{"/srv/docs"}},
		Tools:      map[string][]string{"fetch": {"fetch"}},
		Run:        Run{PermissionMode: ModePlan},
	}
	if err := d.Merge(want); err != nil {
		t.Fatalf("Merge() error = %v", err)
	}
	golden := `# hand-written
version: 1
project: demo # the project
profile: work
servers:
  - github # the code host
  - fetch
tools:
  github: [get_issue]
  fetch:
    - fetch
server_network:
  github: shared
egress:
  # package hosts
  - Registry.Example.com # mixed case, as a person writes it
  - b.example.com
  - proxy.example.com
egress_ignored:
  - tracker.example.com
env_secrets:
  API_KEY: acme.api_key
run:
  permission_mode: plan # careful
toolchains:
  - go
mounts:
  mask:
    - .env
  context:
    - /srv/docs
`
	if diff := cmp.Diff(golden, string(d.Bytes())); diff != "" {
		t.Errorf("merged document mismatch (-want +got):\n%s", diff)
	}
}

func TestDocMergeRefusesAnInvalidDocument(t *testing.T) {
	d := mustParseDoc(t, "version: 1\nproject: demo\nprofile: default\negress: [\"not a host\"]\n")
	before := string(d.Bytes())
	if err := d.Merge(&Manifest{Project: "other"}); err == nil {
		t.Fatal("Merge() of an invalid document succeeded")
	}
	if got := string(d.Bytes()); got != before {
		t.Errorf("a refused Merge changed the document:\n%s", cmp.Diff(before, got))
	}
}

func TestMissingAndUnion(t *testing.T) {
	if got, want := Missing([]string{"Example.com", "x"}, []string{"example.com.", "x", "y", "y", "z"}), []string{"y", "z"}; !cmp.Equal(got, want) {
		t.Errorf("Missing() = %q, want %q", got, want)
	}
	if got, want := Union([]string{"a.example.com"}, []string{"A.example.com", "b.example.com"}, nil, []string{"b.example.com", "c"}), []string{"a.example.com", "b.example.com", "c"}; !cmp.Equal(got, want) {
		t.Errorf("Union() = %q, want %q", got, want)
	}
	if got := Canon("Example.COM."); got != "example.com" {
		t.Errorf("Canon(Example.COM.) = %q, want example.com", got)
	}
	if got := Canon("not a host"); got != "not a host" {
		t.Errorf("Canon(not a host) = %q, want it unchanged", got)
	}
}
