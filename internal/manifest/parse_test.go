package manifest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseFull(t *testing.T) {
	const data = `version: 1
project: demo
profile: work
servers: [github, fetch]
remote_servers:
  search:
    url: https://search.example.com/mcp
    headers: {Authorization: "Bearer ${SEARCH_TOKEN}"}
    secrets: [{name: search.token, env: SEARCH_TOKEN}]
tools: {github: [get_issue]}
server_network: {fetch: none}
toolchains: [go, node]
mounts: {mask: [.env], watch: [Makefile], context: [~/notes]}
egress: [api.example.com, "*.cdn.example.com", "git.example.com:22"]
egress_ignored: [telemetry.example.com]
env_secrets: {GITHUB_TOKEN: github.token}
run: {permission_mode: acceptEdits, output: text, connectors: true, timeout: 600, on_exec_change: fail}
`
	got, err := Parse([]byte(data), FileName)
	if err != nil {
		t.Fatalf("Parse() error = %v", err)
	}
	want := &Manifest{
		Version: 1, Project: "demo", Profile: "work",
		Servers: []string{"github", "fetch"},
		RemoteServers: map[string]RemoteServer{"search": {
			URL: "https://search.example.com/mcp", Transport: DefaultTransport,
			Headers: map[string]string{"Authorization": "Bearer ${SEARCH_TOKEN}"},
			Secrets: []SecretEnv{{Name: "search.token", Env: "SEARCH_TOKEN"}},
		}},
		Tools:         map[string][]string{"github": {"get_issue"}},
		ServerNetwork: map[string]string{"fetch": "none"},
		Toolchains:    []string{"go", "node"},
		Mounts:        Mounts{Mask: []string{".env"}, Watch: []string{"Makefile"}, Context: []string{"~/notes"}},
		Egress:        []string{"api.example.com", "*.cdn.example.com", "git.example.com:22"},
		EgressIgnored: []string{"telemetry.example.com"},
		EnvSecrets:    map[string]string{"GITHUB_TOKEN": "github.token"},
		Run:           Run{PermissionMode: ModeAcceptEdits, Output: "text", Connectors: true, Timeout: 600, OnExecChange: ExecChangeFail},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Parse() mismatch (-want +got):\n%s", diff)
	}
}

func TestParseDefaults(t *testing.T) {
	got, err := Parse([]byte(base), FileName)
	if err != nil {
		t.Fatal(err)
	}
	want := &Manifest{Version: Version, Project: "demo", Profile: "default",
		Run: Run{PermissionMode: ModeDefault, Output: DefaultOutput, Timeout: DefaultTimeout, OnExecChange: ExecChangeWarn}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Parse(%q) mismatch (-want +got):\n%s", base, diff)
	}
}

func TestWithDefaultsDoesNotChangeReceiver(t *testing.T) {
	m := Manifest{Project: "demo", RemoteServers: map[string]RemoteServer{"r": {URL: "https://r.example.com"}}}
	d := m.WithDefaults()
	if m.Version != 0 || m.Run != (Run{}) || m.RemoteServers["r"].Transport != "" {
		t.Errorf("WithDefaults changed its receiver: %+v", m)
	}
	if d.RemoteServers["r"].Transport != DefaultTransport || d.Version != Version || d.Run.Timeout != DefaultTimeout {
		t.Errorf("WithDefaults() = %+v", d)
	}
	set := Manifest{Version: 1, Run: Run{PermissionMode: ModePlan, Output: "json", Timeout: 60, OnExecChange: ExecChangeFail},
		RemoteServers: map[string]RemoteServer{"r": {Transport: "sse"}}}
	if diff := cmp.Diff(set, set.WithDefaults()); diff != "" {
		t.Errorf("WithDefaults() overrode set fields (-want +got):\n%s", diff)
	}
}

func TestDeclaredServers(t *testing.T) {
	m := &Manifest{Servers: []string{"zeta", "alpha"}, RemoteServers: map[string]RemoteServer{"remote-b": {}, "remote-a": {}}}
	if diff := cmp.Diff([]string{"zeta", "alpha", "remote-a", "remote-b"}, m.DeclaredServers()); diff != "" {
		t.Errorf("DeclaredServers() mismatch (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		name string
		want bool
	}{{"zeta", true}, {"remote-a", true}, {"Zeta", false}, {"", false}, {"other", false}} {
		if got := m.IsDeclared(tc.name); got != tc.want {
			t.Errorf("IsDeclared(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := (&Manifest{}).DeclaredServers(); len(got) != 0 {
		t.Errorf("DeclaredServers() of an empty manifest = %q", got)
	}
}

// TestParseStructure covers what the decoder refuses before any value is checked.
func TestParseStructure(t *testing.T) {
	const hint = "check the spelling against the manifest reference in README.md; unknown keys are refused so a typo cannot switch a control off"
	tests := []struct {
		name string
		data string
		want []Problem
	}{
		{"empty", "", []Problem{{Loc: "file", Msg: "is empty", Hint: "run `abox init` to write one"}}},
		{"whitespace", "  \n\n", []Problem{{Loc: "file", Msg: "is empty", Hint: "run `abox init` to write one"}}},
		{"comments only", "# nothing\n", []Problem{{Loc: "file", Msg: "is empty", Hint: "run `abox init` to write one"}}},
		{"unknown top-level key", base + "egres: [a.example.com]\n", []Problem{{Loc: "line 3", Msg: `"egres" is not a known key`, Hint: hint}}},
		{"unknown key in remote server", base + "remote_servers:\n  r:\n    url: https://r.example.com\n    urll: x\n",
			[]Problem{{Loc: "line 6", Msg: `"urll" is not a known key`, Hint: hint}}},
		{"unknown key in remote secret", base + "remote_servers:\n  r:\n    url: https://r.example.com\n    secrets:\n      - {name: a, env: A, value: leaked}\n",
			[]Problem{{Loc: "line 7", Msg: `"value" is not a known key`, Hint: hint}}},
		{"unknown key in mounts", base + "mounts:\n  masks: [.env]\n", []Problem{{Loc: "line 4", Msg: `"masks" is not a known key`, Hint: hint}}},
		{"unknown key in run", base + "run:\n  permision_mode: plan\n", []Problem{{Loc: "line 4", Msg: `"permision_mode" is not a known key`, Hint: hint}}},
		{"every unknown key", base + "egres: []\nmounts: {masks: []}\nrun: {sandbox: off}\n", []Problem{
			{Loc: "line 3", Msg: `"egres" is not a known key`, Hint: hint},
			{Loc: "line 4", Msg: `"masks" is not a known key`, Hint: hint},
			{Loc: "line 5", Msg: `"sandbox" is not a known key`, Hint: hint},
		}},
		{"duplicate top-level key", base + "egress: [a.example.com]\negress: [b.example.com]\n",
			[]Problem{{Loc: "line 4", Msg: `mapping key "egress" already defined at line 3`}}},
		{"duplicate nested key", base + "run:\n  timeout: 60\n  timeout: 90\n",
			[]Problem{{Loc: "line 5", Msg: `mapping key "timeout" already defined at line 4`}}},
		{"duplicate map key", base + "env_secrets: {A: x, A: y}\n",
			[]Problem{{Loc: "line 3", Msg: `mapping key "A" already defined at line 3`}}},
		{"two documents", base + "---\n" + base, []Problem{{Loc: "file", Msg: "holds more than one YAML document"}}},
		{"empty second document", base + "---\n", []Problem{{Loc: "file", Msg: "holds more than one YAML document"}}},
		{"document end marker is fine", "---\n" + base + "...\n", nil},
		{"sequence", "- project: demo\n", []Problem{{Loc: "line 1", Msg: "cannot unmarshal !!seq into manifest.Manifest"}}},
		{"scalar", "demo\n", []Problem{{Loc: "line 1", Msg: "cannot unmarshal !!str `demo` into manifest.Manifest"}}},
		{"wrong types, each located", base + "servers: github\nrun:\n  timeout: soon\n  connectors: 2\n", []Problem{
			{Loc: "line 3", Msg: "cannot unmarshal !!str `github` into []string"},
			{Loc: "line 5", Msg: "cannot unmarshal !!str `soon` into int"},
			{Loc: "line 6", Msg: "cannot unmarshal !!int `2` into bool"},
		}},
		// yaml.v3 locates this parser error by its context, the "[" of line 3, counted from 0.
		{"syntax error", base + "egress: [a.example.com\n", []Problem{{Loc: "line 2", Msg: "did not find expected ',' or ']'"}}},
		{"tab indentation", base + "run:\n\ttimeout: 60\n", []Problem{{Loc: "line 4", Msg: "found character that cannot start any token"}}},
		{"unknown anchor", base + "egress: *hosts\n", []Problem{{Loc: "file", Msg: "unknown anchor 'hosts' referenced"}}},
		{"too large", base + "# " + strings.Repeat("x", MaxSize) + "\n", []Problem{{Loc: "file", Msg: "is larger than 4194304 bytes"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.data), FileName)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Parse() error = %v, want nil", err)
				}
				return
			}
			var me *Error
			if !errors.As(err, &me) {
				t.Fatalf("Parse() error = %v, want *Error", err)
			}
			if diff := cmp.Diff(tc.want, me.Problems); diff != "" {
				t.Errorf("Parse() problems mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestErrorReportsEveryProblem: problems from every field are reported together, in field
// order, each on its own line in the located form.
func TestErrorReportsEveryProblem(t *testing.T) {
	const data = `project: Demo
profile: default
servers: [ok, "a b"]
toolchains: [perl]
mounts: {mask: [/etc]}
egress: [a.example.com, b.example.com, "exa mple.com", "10.0.0.1"]
env_secrets: {PATH: s}
run: {timeout: 5}
`
	_, err := Parse([]byte(data), FileName)
	if err == nil {
		t.Fatal("Parse() error = nil")
	}
	want := strings.Join([]string{
		`agentbox.yaml: project: "Demo" is not a valid project name`,
		`agentbox.yaml: servers[1]: "a b" is not a valid server name (letters, digits, . _ -)`,
		`agentbox.yaml: toolchains[0]: "perl" is not a known toolchain`,
		`agentbox.yaml: mounts.mask[0]: "/etc" is absolute; write it relative to the workspace`,
		`agentbox.yaml: egress[2]: "exa mple.com" is not a host name: it contains a space or control character`,
		`agentbox.yaml: egress[3]: "10.0.0.1" is an IP address; egress is decided by name`,
		`agentbox.yaml: env_secrets.PATH: "PATH" is set by abox itself and cannot carry a secret`,
		`agentbox.yaml: run.timeout: 5 is outside 30–86400 seconds`,
	}, "\n")
	if got := err.Error(); got != want {
		t.Errorf("Parse() error =\n%s\nwant\n%s", got, want)
	}
	var me *Error
	if !errors.As(err, &me) {
		t.Fatalf("Parse() error = %T, want *Error", err)
	}
	hints := map[string]string{}
	for _, p := range me.Problems {
		hints[p.Loc] = p.Hint
	}
	for loc, want := range map[string]string{
		"project":       "use 1–64 of a-z 0-9 . _ -, starting with a letter or digit",
		"toolchains[0]": "choose from python, go, node, rust, java, ruby, php",
		"egress[3]":     "allow the host name that serves it instead",
	} {
		if hints[loc] != want {
			t.Errorf("hint at %s = %q, want %q", loc, hints[loc], want)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	if _, _, err := Load(path); !errors.Is(err, ErrNotFound) {
		t.Errorf("Load(missing) error = %v, want ErrNotFound", err)
	}
	if err := os.WriteFile(path, []byte(base), 0o644); err != nil {
		t.Fatal(err)
	}
	m, data, err := Load(path)
	if err != nil || m.Project != "demo" || string(data) != base {
		t.Errorf("Load() = %+v, %q, %v", m, data, err)
	}
	if err := os.WriteFile(path, []byte(base+strings.Repeat("#", MaxSize)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Load(path); err == nil || !strings.Contains(err.Error(), "is larger than") {
		t.Errorf("Load(too large) error = %v", err)
	}
	if _, _, err := Load(dir); err == nil || errors.Is(err, ErrNotFound) {
		t.Errorf("Load(a directory) error = %v, want a read error", err)
	}
}

func TestFind(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(root, "ws")
	deep := filepath.Join(ws, "a", "b")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, FileName), []byte(base), 0o644); err != nil {
		t.Fatal(err)
	}
	// A directory named like the manifest is not a manifest.
	if err := os.Mkdir(filepath.Join(deep, FileName), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, start := range []string{ws, deep} {
		if got, err := Find(start); err != nil || got != ws {
			t.Errorf("Find(%q) = %q, %v, want %q", start, got, err, ws)
		}
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(deep, link); err != nil {
		t.Fatal(err)
	}
	if got, err := Find(link); err != nil || got != ws {
		t.Errorf("Find(%q) = %q, %v, want %q", link, got, err, ws)
	}
	other := filepath.Join(root, "other")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := Find(other); !errors.Is(err, ErrNotFound) || got != other {
		t.Errorf("Find(%q) = %q, %v, want %q, ErrNotFound", other, got, err, other)
	}
}

// TestParseNullKeys: yaml.v3 drops an entry whose key is null, value and all, even with
// KnownFields; abox refuses it instead.
func TestParseNullKeys(t *testing.T) {
	const hint = "name the key or remove the entry; an entry with a null key would be ignored"
	tests := []struct {
		name, data string
		want       []Problem
	}{
		{"tilde at the top", base + "~: {egress: [evil.example.com]}\n", []Problem{{Loc: "line 3", Msg: "has a null key", Hint: hint}}},
		{"null in run", base + "run:\n  null: 5\n", []Problem{{Loc: "line 4", Msg: "has a null key", Hint: hint}}},
		{"empty explicit key", base + "? \n: x\n", []Problem{{Loc: "line 3", Msg: "has a null key", Hint: hint}}},
		{"anchored empty key", base + "&a : x\n", []Problem{{Loc: "line 3", Msg: "has a null key", Hint: hint}}},
		{"alias of a null key", base + "run: {&n ~: 1}\nmounts: {*n : 2}\n", []Problem{
			{Loc: "line 3", Msg: "has a null key", Hint: hint},
			{Loc: "line 4", Msg: "has a null key", Hint: hint},
		}},
		{"in a map field", base + "env_secrets: {NULL: s}\n", []Problem{{Loc: "line 3", Msg: "has a null key", Hint: hint}}},
		{"in a remote server", base + "remote_servers: {r: {url: 'https://r.example.com', ~: x}}\n", []Problem{{Loc: "line 3", Msg: "has a null key", Hint: hint}}},
		{"quoted null is a string", base + "env_secrets: {'null': s}\n", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.data), FileName)
			var got []Problem
			var me *Error
			if errors.As(err, &me) {
				got = me.Problems
			} else if err != nil {
				t.Fatalf("Parse() error = %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Parse(%q) problems mismatch (-want +got):\n%s", tc.data, diff)
			}
		})
	}
}

// TestLoadHostileManifest: the manifest is in the workspace; a FIFO or a device in its place is
// refused at once, never opened.
func TestLoadHostileManifest(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, _, err := Load(path); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file: FIFO") {
			t.Errorf("Load(fifo) error = %v, want not a regular file", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Load(fifo) blocked")
	}
	os.Remove(path)
	if err := os.Symlink("/dev/zero", path); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Load(path); err == nil || !strings.Contains(err.Error(), "character device") {
		t.Errorf("Load(link to /dev/zero) error = %v, want not a regular file", err)
	}
}
