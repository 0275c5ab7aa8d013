package manifest

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseHostArgs(t *testing.T) {
	got, err := ParseHostArgs("abox egress add", []string{"Example.COM.", "example.com", "*.cdn.example.com", "git.example.com:22"})
	if err != nil {
		t.Fatalf("ParseHostArgs() error = %v", err)
	}
	if want := []string{"example.com", "*.cdn.example.com", "git.example.com:22"}; !cmp.Equal(got, want) {
		t.Errorf("ParseHostArgs() = %q, want %q", got, want)
	}
	_, err = ParseHostArgs("abox egress add", []string{"ok.example.com", "exa mple.com", "http://x.example.com"})
	var me *Error
	if !errors.As(err, &me) || me.Source != "abox egress add" || len(me.Problems) != 2 {
		t.Fatalf("ParseHostArgs(two bad) error = %v, want a located error with both", err)
	}
	for _, p := range me.Problems {
		if p.Hint == "" {
			t.Errorf("problem %+v has no hint", p)
		}
	}
}

func TestParseEnvSecretArgs(t *testing.T) {
	got, err := ParseEnvSecretArgs("abox secrets attach", []string{"API_KEY=acme.api_key", "DB=acme.db"})
	if err != nil {
		t.Fatalf("ParseEnvSecretArgs() error = %v", err)
	}
	if want := []EnvSecret{{"API_KEY", "acme.api_key"}, {"DB", "acme.db"}}; !cmp.Equal(got, want) {
		t.Errorf("ParseEnvSecretArgs() = %v, want %v", got, want)
	}
	bad := []struct{ arg, msg string }{
		{"NOEQUALS", "is not ENV=NAME"},
		{"=name", "is not ENV=NAME"},
		{"1X=name", "is not a valid environment variable name"},
		{"ABOX_RUN=name", "is set by abox itself"},
		{"HOME=name", "is set by abox itself"},
		{"OK=bad name", "is not a valid secret name"},
	}
	for _, b := range bad {
		_, err := ParseEnvSecretArgs("abox secrets attach", []string{"GOOD=a.b", b.arg})
		var me *Error
		if !errors.As(err, &me) || len(me.Problems) != 1 {
			t.Errorf("ParseEnvSecretArgs(%q) error = %v, want one problem", b.arg, err)
			continue
		}
		if p := me.Problems[0]; !strings.Contains(p.Msg, b.msg) || !strings.HasPrefix(p.Loc, "argument 2") || p.Hint == "" {
			t.Errorf("ParseEnvSecretArgs(%q) problem = %+v, want %q at argument 2 with a hint", b.arg, p, b.msg)
		}
	}
}

func TestParseEnvArgs(t *testing.T) {
	if err := ParseEnvArgs("abox secrets detach", []string{"API_KEY", "DB_URL"}); err != nil {
		t.Errorf("ParseEnvArgs(good) = %v", err)
	}
	for _, arg := range []string{"API_KEY=acme.api_key", "1X", "", "A B"} {
		err := ParseEnvArgs("abox secrets detach", []string{"GOOD", arg})
		var me *Error
		if !errors.As(err, &me) || len(me.Problems) != 1 {
			t.Errorf("ParseEnvArgs(%q) = %v, want one problem", arg, err)
			continue
		}
		p := me.Problems[0]
		if p.Loc != "argument 2" || !strings.Contains(p.Msg, "is not a valid environment variable name") ||
			p.Hint != "name the variable only, without =NAME: abox secrets detach API_KEY" {
			t.Errorf("ParseEnvArgs(%q) problem = %+v", arg, p)
		}
	}
}

func TestSplitAttached(t *testing.T) {
	m := &Manifest{EnvSecrets: map[string]string{"API_KEY": "acme.api_key", "DB": "acme.db"}}
	attached, absent := m.SplitAttached([]string{"DB", "NOPE", "API_KEY", "ALSO_NOT"})
	if !cmp.Equal(attached, []string{"DB", "API_KEY"}) || !cmp.Equal(absent, []string{"NOPE", "ALSO_NOT"}) {
		t.Errorf("SplitAttached = %v, %v", attached, absent)
	}
	if attached, absent := (&Manifest{}).SplitAttached([]string{"X"}); attached != nil || !cmp.Equal(absent, []string{"X"}) {
		t.Errorf("SplitAttached without env_secrets = %v, %v", attached, absent)
	}
}

func TestParseRemoteArgs(t *testing.T) {
	base := RemoteServer{URL: "https://mcp.example.com/mcp", Transport: DefaultTransport}
	got, err := ParseRemoteArgs("abox mcp add-remote", base,
		[]string{" Authorization : Bearer ${DOCS_TOKEN} ", "X-A:b"}, []string{"docs.token=DOCS_TOKEN"})
	if err != nil {
		t.Fatal(err)
	}
	want := base
	want.Headers = map[string]string{"Authorization": "Bearer ${DOCS_TOKEN}", "X-A": "b"}
	want.Secrets = []SecretEnv{{Name: "docs.token", Env: "DOCS_TOKEN"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseRemoteArgs (-want +got):\n%s", diff)
	}
	_, err = ParseRemoteArgs("abox mcp add-remote", base, []string{"no colon", ": v"}, []string{"name", "=ENV", "ok=OK"})
	var me *Error
	if !errors.As(err, &me) || me.Source != "abox mcp add-remote" || len(me.Problems) != 4 {
		t.Fatalf("ParseRemoteArgs(four bad) = %v, want a located error with all four", err)
	}
	for _, p := range me.Problems {
		if (p.Loc != "--header" && p.Loc != "--secret") || p.Hint == "" {
			t.Errorf("problem %+v: want its flag and a hint", p)
		}
	}
}

func TestCheckInitArgs(t *testing.T) {
	good := InitArgs{Project: "web", Profile: "dev", PermissionMode: PermissionModes[0], Servers: []string{"github"},
		Egress: []string{"example.com", "*.cdn.example.com"}, Toolchains: []string{"go"}, Masks: []string{".env", "secrets/"},
		Credential: "claude-key"}
	if err := CheckInitArgs("abox init", good); err != nil {
		t.Fatalf("CheckInitArgs(good) = %v", err)
	}
	if err := CheckInitArgs("abox init", InitArgs{}); err != nil {
		t.Fatalf("CheckInitArgs(none) = %v", err)
	}
	bad := InitArgs{Project: "-web", Profile: "a b", PermissionMode: "yolo", Servers: []string{"a/b"},
		Egress: []string{"http://x"}, Toolchains: []string{"cobol", "dotnet"}, Masks: []string{"/etc/passwd"},
		Credential: "../key"}
	err := CheckInitArgs("abox init", bad)
	var me *Error
	if !errors.As(err, &me) || me.Source != "abox init" {
		t.Fatalf("CheckInitArgs(bad) = %v, want a located error", err)
	}
	var locs []string
	for _, p := range me.Problems {
		locs = append(locs, p.Loc)
		if p.Hint == "" {
			t.Errorf("problem %+v has no hint", p)
		}
	}
	want := "--project --profile --server --egress --toolchain --toolchain --mask --permission-mode --credential"
	if got := strings.Join(locs, " "); got != want {
		t.Errorf("problems at %s, want %s", got, want)
	}
}
