package config

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/manifest"
)

// TestCustomServersShape: both shapes decode, and a problem is reported against the shape the
// file has.
func TestCustomServersShape(t *testing.T) {
	const digest = "@sha256:1111111111111111111111111111111111111111111111111111111111111111"
	pinned := CustomServer{Image: "example.test/mcp/a" + digest}
	tests := []struct {
		name string
		data string
		want CustomServers
		errs []string
	}{
		{"bare", "a: {image: example.test/mcp/a" + digest + "}\n", CustomServers{"a": pinned}, nil},
		{"under servers", "servers:\n  a: {image: example.test/mcp/a" + digest + "}\n", CustomServers{"a": pinned}, nil},
		{"bare server named servers", "servers: {image: example.test/mcp/a" + digest + "}\n", CustomServers{"servers": pinned}, nil},
		{"empty under servers", "servers: {}\n", CustomServers{}, nil},
		{"null under servers", "servers:\n", nil, nil},
		{"empty file", "", nil, nil},
		{"typo under servers", "servers:\n  a: {imag: x}\n", nil, []string{`line 2: "imag" is not a known key`}},
		{"typo in bare", "a: {imag: x}\n", nil, []string{`line 1: "imag" is not a known key`}},
		{"servers beside a server", "servers: {a: {image: x}}\nb: {image: y}\n", nil, []string{
			`line 1: "a" is not a known key`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseCustomServers([]byte(tc.data), "custom-servers.yaml")
			if diff := cmp.Diff(tc.errs, lines(t, err)); diff != "" {
				t.Fatalf("ParseCustomServers(%q) problems mismatch (-want +got):\n%s", tc.data, diff)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseCustomServers(%q) mismatch (-want +got):\n%s", tc.data, diff)
			}
		})
	}
}

func TestCustomSecretDerivation(t *testing.T) {
	tests := []struct {
		in   string
		want CustomSecret
	}{
		{"some.token", CustomSecret{Name: "some.token", Env: "SOME_TOKEN"}},
		{"github-pat", CustomSecret{Name: "github-pat", Env: "GITHUB_PAT"}},
		{"a..b--c", CustomSecret{Name: "a..b--c", Env: "A_B_C"}},
		{"trailing.dot.", CustomSecret{Name: "trailing.dot.", Env: "TRAILING_DOT"}},
		{"Mixed_Case9", CustomSecret{Name: "Mixed_Case9", Env: "MIXED_CASE9"}},
		{"already_UPPER", CustomSecret{Name: "already_UPPER", Env: "ALREADY_UPPER"}},
	}
	for _, tc := range tests {
		data := fmt.Sprintf("s: {image: x, pin: false, secrets: [%q]}\n", tc.in)
		cs, err := ParseCustomServers([]byte(data), "custom-servers.yaml")
		if err != nil {
			t.Errorf("ParseCustomServers(%q) error = %v", data, err)
			continue
		}
		if diff := cmp.Diff([]CustomSecret{tc.want}, cs["s"].Secrets); diff != "" {
			t.Errorf("secret %q mismatch (-want +got):\n%s", tc.in, diff)
		}
	}
	// Both forms in one list, and names whose derived variable is invalid.
	data := `s: {image: x, pin: false, secrets: [a.b, {name: c, env: CUSTOM}, 1password, "", "--"]}` + "\n"
	_, err := ParseCustomServers([]byte(data), "custom-servers.yaml")
	want := []string{
		`servers.s.secrets[2].env: "1PASSWORD" is not a valid environment variable name`,
		`servers.s.secrets[3].name: "" is not a valid secret name`,
		`servers.s.secrets[3].env: "" is not a valid environment variable name`,
		`servers.s.secrets[4].name: "--" is not a valid secret name`,
		`servers.s.secrets[4].env: "" is not a valid environment variable name`,
	}
	if diff := cmp.Diff(want, lines(t, err)); diff != "" {
		t.Errorf("problems mismatch (-want +got):\n%s", diff)
	}
}

// TestCustomSecretUnknownKeys: the mapping form of a secret refuses unknown keys like every
// other mapping, although it is decoded by its own UnmarshalYAML.
func TestCustomSecretUnknownKeys(t *testing.T) {
	data := "s:\n  image: x\n  pin: false\n  secrets:\n    - {name: a, env: A, value: hunter2}\n    - {nmae: b, env: B}\n    - {name: c, env: C}\n"
	_, err := ParseCustomServers([]byte(data), "custom-servers.yaml")
	want := []manifest.Problem{
		{Loc: "line 5", Msg: `"value" is not a known key`, Hint: "check the spelling against the configuration reference in README.md"},
		{Loc: "line 6", Msg: `"nmae" is not a known key`, Hint: "check the spelling against the configuration reference in README.md"},
	}
	if diff := cmp.Diff(want, problemsOf(t, err)); diff != "" {
		t.Errorf("ParseCustomServers(%q) problems mismatch (-want +got):\n%s", data, diff)
	}
	cs, err := ParseCustomServers([]byte("s: {image: x, pin: false, secrets: [{name: a, env: A}]}\n"), "custom-servers.yaml")
	if err != nil || len(cs["s"].Secrets) != 1 || cs["s"].Secrets[0] != (CustomSecret{Name: "a", Env: "A"}) {
		t.Errorf("ParseCustomServers() = %+v, %v", cs, err)
	}
}

func TestCustomServerValidate(t *testing.T) {
	const img = "registry.example.test/mcp/tool" + digest
	const pinHint = "pin it as repo@sha256:<digest>, or set pin: false for a local image"
	tests := []struct {
		name string
		yaml string // the server "s", as a flow mapping
		want []manifest.Problem
	}{
		{"pinned", "{image: '" + img + "'}", nil},
		{"every field", "{image: '" + img + "', network: none, description: A tool, tools: [search, get_item], " +
			"env: {LOG_LEVEL: debug, EMPTY: ''}, command: [--stdio, '--flag=$(not run)'], volumes: ['/srv/data:/data:ro'], secrets: [a.token]}", nil},
		{"all tools", "{image: '" + img + "', tools: ['*']}", nil},
		{"local image id", "{image: 'sha256:" + hex64 + "'}", nil},
		{"unpinned", "{image: 'registry.example.test/mcp/tool:1.0'}", ph("servers.s.image", `"registry.example.test/mcp/tool:1.0" is not digest-pinned`, pinHint)},
		{"pin true unpinned", "{image: tool, pin: true}", ph("servers.s.image", `"tool" is not digest-pinned`, pinHint)},
		{"pin false tag", "{image: 'tool:dev', pin: false}", nil},
		{"pin false digest", "{image: '" + img + "', pin: false}", nil},
		{"pin false bad ref", "{image: 'tool dev', pin: false}", p("servers.s.image", `"tool dev" is not an image reference`)},
		{"no image", "{pin: false}", p("servers.s.image", `"" is not an image reference`)},
		{"hostile image", `{image: "tool\n--privileged", pin: false}`, p("servers.s.image", `"tool\n--privileged" is not an image reference`)},
		{"network host", "{image: '" + img + "', network: host}", p("servers.s.network", `"host" is not one of shared, none`)},
		{"tool names", "{image: '" + img + "', tools: ['a b', '$(id)', '**']}", []manifest.Problem{
			{Loc: "servers.s.tools[0]", Msg: `"a b" is not a valid tool name`},
			{Loc: "servers.s.tools[1]", Msg: `"$(id)" is not a valid tool name`},
			{Loc: "servers.s.tools[2]", Msg: `"**" is not a valid tool name`},
		}},
		{"env", `{image: '` + img + `', env: {"A B": x, OK: "a\nb"}}`, []manifest.Problem{
			{Loc: `servers.s.env."A B"`, Msg: `"A B" is not a valid environment variable name`},
			{Loc: "servers.s.env.OK", Msg: "contains a control character"},
		}},
		{"command and volumes", `{image: '` + img + `', command: ["a\x00"], volumes: ["/a:/b\n"]}`, []manifest.Problem{
			{Loc: "servers.s.command/volumes[0]", Msg: "contains a control character"},
			{Loc: "servers.s.command/volumes[1]", Msg: "contains a control character"},
		}},
		{"description", "{image: '" + img + "', description: \"\u202e\"}", p("servers.s.description", `contains a non-ASCII character '\u202e'`)},
		{"unknown key", "{image: '" + img + "', ports: [80]}", ph("line 1", `"ports" is not a known key`, "check the spelling against the configuration reference in README.md")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := "s: " + tc.yaml + "\n"
			_, err := ParseCustomServers([]byte(data), "custom-servers.yaml")
			if diff := cmp.Diff(tc.want, problemsOf(t, err)); diff != "" {
				t.Errorf("ParseCustomServers(%q) problems mismatch (-want +got):\n%s", data, diff)
			}
		})
	}
}

func TestCustomServerNames(t *testing.T) {
	data := `"a b": {image: x, pin: false}
"$(id)": {image: x, pin: false}
Ok.Name-1_x: {image: x, pin: false}
`
	_, err := ParseCustomServers([]byte(data), "custom-servers.yaml")
	want := []string{
		`servers."$(id)": "$(id)" is not a valid server name`,
		`servers."a b": "a b" is not a valid server name`,
	}
	if diff := cmp.Diff(want, lines(t, err)); diff != "" {
		t.Errorf("problems mismatch (-want +got):\n%s", diff)
	}
}

func TestPinned(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		pin  *bool
		want bool
	}{{nil, true}, {&yes, true}, {&no, false}} {
		if got := (CustomServer{Pin: tc.pin}).Pinned(); got != tc.want {
			t.Errorf("Pinned() with pin %v = %v, want %v", tc.pin, got, tc.want)
		}
	}
}
