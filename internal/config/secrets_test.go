package config

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/manifest"
)

func TestSecretKind(t *testing.T) {
	tests := []struct {
		m    SecretMapping
		want string
	}{
		{SecretMapping{Op: "op://v/i/f"}, SecretOp},
		{SecretMapping{File: "/f"}, SecretFile},
		{SecretMapping{Env: "E"}, SecretEnv},
		{SecretMapping{Source: SecretPrompt}, SecretPrompt},
		{SecretMapping{Source: SecretDocker}, SecretDocker},
		{SecretMapping{Source: SecretEnv, Op: "op://v/i/f"}, SecretEnv},
		{SecretMapping{}, ""},
	}
	for _, tc := range tests {
		if got := tc.m.Kind(); got != tc.want {
			t.Errorf("%+v.Kind() = %q, want %q", tc.m, got, tc.want)
		}
	}
}

func TestParseSecrets(t *testing.T) {
	const data = `mappings:
  - {secret: github.token, op: "op://Private/GitHub Token/credential", description: the PAT}
  - {secret: search-key, file: ~/.config/search/key}
  - {secret: ci, env: CI_TOKEN}
  - {secret: typed, source: prompt}
  - {secret: stored, source: docker}
  - {secret: explicit, source: op, op: "op://v/i/section/field"}
  - {secret: cafe, source: op, op: "op://Vault/Café/password"}
`
	s, err := ParseSecrets([]byte(data), "secrets.yaml")
	if err != nil {
		t.Fatalf("ParseSecrets() error = %v", err)
	}
	want := []string{SecretOp, SecretFile, SecretEnv, SecretPrompt, SecretDocker, SecretOp, SecretOp}
	var got []string
	for _, m := range s.Mappings {
		got = append(got, m.Kind())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("kinds mismatch (-want +got):\n%s", diff)
	}
	if m, ok := s.Lookup("ci"); !ok || m.Env != "CI_TOKEN" {
		t.Errorf("Lookup(ci) = %+v, %v", m, ok)
	}
	if _, ok := s.Lookup("missing"); ok {
		t.Error("Lookup(missing) found a mapping")
	}
}

// TestSecretsValidate: every refusal of secrets.yaml, with one clear problem per cause.
func TestSecretsValidate(t *testing.T) {
	tests := []struct {
		name string
		item string // one flow mapping under mappings:
		want []manifest.Problem
	}{
		{"two sources", `{secret: a, op: "op://v/i/f", env: X}`, []manifest.Problem{
			{Loc: "mappings[0]", Msg: "names more than one source: op, env", Hint: "keep one of op, env"}}},
		{"three sources", `{secret: a, op: "op://v/i/f", file: /f, env: X}`, []manifest.Problem{
			{Loc: "mappings[0]", Msg: "names more than one source: op, file, env", Hint: "keep one of op, file, env"}}},
		{"no source", `{secret: a}`, []manifest.Problem{
			{Loc: "mappings[0]", Msg: "has no source", Hint: "set one of op, file, env, or source: prompt|docker"}}},
		{"source op without op", `{secret: a, source: op}`, []manifest.Problem{
			{Loc: "mappings[0]", Msg: `source "op" needs its op field`, Hint: "set op"}}},
		{"source env with op instead", `{secret: a, source: env, op: "op://v/i/f"}`, []manifest.Problem{
			{Loc: "mappings[0]", Msg: `source "env" needs its env field`, Hint: "set env, or remove source to use op"}}},
		{"source file without file", `{secret: a, source: file}`, []manifest.Problem{
			{Loc: "mappings[0]", Msg: `source "file" needs its file field`, Hint: "set file"}}},
		{"prompt with a field", `{secret: a, source: prompt, env: X}`, []manifest.Problem{
			{Loc: "mappings[0]", Msg: `source "prompt" takes no op, file or env`, Hint: "remove env for source prompt"}}},
		{"docker with a field", `{secret: a, source: docker, op: "op://v/i/f"}`, []manifest.Problem{
			{Loc: "mappings[0]", Msg: `source "docker" takes no op, file or env`, Hint: "remove op for source docker"}}},
		{"unknown source", `{secret: a, source: vault}`, []manifest.Problem{
			{Loc: "mappings[0].source", Msg: `"vault" is not a known source`, Hint: "choose op, file, env, prompt or docker"}}},
		{"env name", `{secret: a, env: "1X"}`, []manifest.Problem{
			{Loc: "mappings[0].env", Msg: `"1X" is not a valid environment variable name`}}},
		{"relative file", `{secret: a, file: key.txt}`, []manifest.Problem{
			{Loc: "mappings[0].file", Msg: `"key.txt" is not absolute`, Hint: "write an absolute path or one starting with ~/"}}},
		{"file newline", `{secret: a, file: "/k\n"}`, []manifest.Problem{
			{Loc: "mappings[0].file", Msg: "contains a control character"}}},
		{"bad secret name", `{secret: "a b", source: prompt}`, []manifest.Problem{
			{Loc: "mappings[0].secret", Msg: `"a b" is not a valid secret name`}}},
		{"description newline", `{secret: a, source: prompt, description: "x\ny"}`, []manifest.Problem{
			{Loc: "mappings[0].description", Msg: "contains a control character"}}},
	}
	for _, ref := range []string{"vault/item/field", "op:/v/i/f", "op://v/i", "op://v//f", "op://v/i/f/", "op://", "OP://v/i/f", " op://v/i/f"} {
		tests = append(tests, struct {
			name string
			item string
			want []manifest.Problem
		}{"op " + ref, fmt.Sprintf("{secret: a, op: %q}", ref), []manifest.Problem{
			{Loc: "mappings[0].op", Msg: fmt.Sprintf("%q is not a 1Password reference", ref), Hint: "write op://vault/item/field"}}})
	}
	for _, ref := range []string{"op://v/i/f\n", "op://v/i/f\x00", "op://v/i\x1b[2J/f", "op://v/i\u202e/f", "op://v/i/" + strings.Repeat("f", 1024)} {
		tests = append(tests, struct {
			name string
			item string
			want []manifest.Problem
		}{fmt.Sprintf("op %+.30q", ref), fmt.Sprintf("{secret: a, op: %q}", ref), []manifest.Problem{
			{Loc: "mappings[0].op", Msg: fmt.Sprintf("%q is not a 1Password reference: it holds an unprintable character or is too long", ref)}}})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := "mappings:\n  - " + tc.item + "\n"
			_, err := ParseSecrets([]byte(data), "secrets.yaml")
			if diff := cmp.Diff(tc.want, problemsOf(t, err)); diff != "" {
				t.Errorf("ParseSecrets(%q) problems mismatch (-want +got):\n%s", data, diff)
			}
		})
	}
}

func TestSecretsEveryProblem(t *testing.T) {
	data := `mappings:
  - {secret: a, source: prompt}
  - {secret: a, source: docker}
  - {secret: b}
  - {secret: "", env: "X Y"}
`
	_, err := ParseSecrets([]byte(data), "secrets.yaml")
	want := []string{
		`mappings[1].secret: "a" is mapped twice`,
		"mappings[2]: has no source",
		`mappings[3].secret: "" is not a valid secret name`,
		`mappings[3].env: "X Y" is not a valid environment variable name`,
	}
	if diff := cmp.Diff(want, lines(t, err)); diff != "" {
		t.Errorf("problems mismatch (-want +got):\n%s", diff)
	}
	if err == nil || !strings.HasPrefix(err.Error(), "secrets.yaml: mappings[1].secret: ") {
		t.Errorf("Error() = %v, want it located in secrets.yaml", err)
	}
}

func TestParseSecretsStructure(t *testing.T) {
	tests := []struct {
		name, data string
		want       []string
	}{
		{"empty", "", nil},
		{"no mappings", "mappings: []\n", nil},
		{"unknown top-level key", "mapping: []\n", []string{`line 1: "mapping" is not a known key`}},
		{"unknown mapping key", "mappings: [{secret: a, value: hunter2}]\n", []string{`line 1: "value" is not a known key`}},
		{"duplicate key", "mappings: [{secret: a, secret: b}]\n", []string{`line 1: mapping key "secret" already defined at line 1`}},
		{"not a list", "mappings: {secret: a}\n", []string{"line 1: cannot unmarshal !!map into []config.SecretMapping"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSecrets([]byte(tc.data), "secrets.yaml")
			if diff := cmp.Diff(tc.want, lines(t, err)); diff != "" {
				t.Errorf("ParseSecrets(%q) problems mismatch (-want +got):\n%s", tc.data, diff)
			}
		})
	}
}

func TestSecretsSelect(t *testing.T) {
	s := &Secrets{Mappings: []SecretMapping{{Secret: "a", Env: "A"}, {Secret: "b", Env: "B"}, {Secret: "c", Env: "C"}}}
	all, unmapped := s.Select(nil)
	if len(all) != 3 || unmapped != "" {
		t.Errorf("Select(nil) = %v, %q; want every mapping", all, unmapped)
	}
	some, unmapped := s.Select([]string{"c", "a"})
	if len(some) != 2 || some[0].Secret != "c" || some[1].Secret != "a" || unmapped != "" {
		t.Errorf("Select(c, a) = %v, %q; want c then a", some, unmapped)
	}
	none, unmapped := s.Select([]string{"a", "zz", "b"})
	if none != nil || unmapped != "zz" {
		t.Errorf("Select(a, zz, b) = %v, %q; want nothing and zz unmapped", none, unmapped)
	}
}
