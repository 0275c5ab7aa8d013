package render_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/render"
)

// Checks that every artifact stays inside its grammar. The golden, invariant and fuzz tests all
// use them.

// artifactMap returns the artifacts by name; review ones are prefixed with ".devcontainer/".
func artifactMap(arts []render.Artifact) map[string]render.Artifact {
	out := map[string]render.Artifact{}
	for _, a := range arts {
		out[goldenPath(a)] = a
	}
	return out
}

func artifactData(t testing.TB, arts []render.Artifact, name string) []byte {
	t.Helper()
	a, ok := artifactMap(arts)[name]
	if !ok {
		t.Fatalf("no artifact %s", name)
	}
	return a.Data
}

func runSpecOf(t testing.TB, arts []render.Artifact) render.RunSpec {
	t.Helper()
	var rs render.RunSpec
	if err := decodeJSONStrict(artifactData(t, arts, render.RunSpecFile), &rs); err != nil {
		t.Fatalf("%s: %v", render.RunSpecFile, err)
	}
	return rs
}

// decodeJSONStrict decodes exactly one JSON value into v, refusing unknown fields.
func decodeJSONStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data after the JSON value")
	}
	return nil
}

// checkJSON requires data to be exactly one JSON object.
func checkJSON(data []byte) error {
	var v map[string]any
	return decodeJSONStrict(data, &v)
}

// checkYAML requires data to be exactly one YAML mapping.
func checkYAML(data []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		return err
	}
	var extra any
	if err := dec.Decode(&extra); err == nil {
		return fmt.Errorf("more than one YAML document")
	}
	if v == nil {
		return fmt.Errorf("not a mapping")
	}
	return nil
}

// dockerfileInstructions are the only instructions abox's Dockerfiles may hold.
var dockerfileInstructions = map[string]bool{
	"FROM": true, "ENV": true, "COPY": true, "RUN": true, "LABEL": true, "USER": true,
	"WORKDIR": true, "ENTRYPOINT": true, "CMD": true,
}

// dockerfileInstructionList splits a Dockerfile into logical lines as the builder does (comment
// lines dropped, also inside a continuation; a line ending in a backslash continues) and returns
// the instruction of each. It fails on a logical line that does not start with an allowed
// instruction, on a parser directive and on a file that ends inside a continuation.
func dockerfileInstructionList(data []byte) ([]string, error) {
	var out []string
	cont := false
	for i, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") {
			if !cont && len(out) == 0 && strings.Contains(trimmed, "=") && isDirective(trimmed) {
				return nil, fmt.Errorf("line %d: parser directive %q", i+1, trimmed)
			}
			continue
		}
		if trimmed == "" {
			continue
		}
		if !cont {
			word, _, _ := strings.Cut(trimmed, " ")
			if !dockerfileInstructions[strings.ToUpper(word)] {
				return nil, fmt.Errorf("line %d: %q is not an allowed instruction", i+1, word)
			}
			if word != strings.ToUpper(word) {
				return nil, fmt.Errorf("line %d: instruction %q is not upper-case", i+1, word)
			}
			out = append(out, word)
		}
		cont = strings.HasSuffix(strings.TrimRight(line, " \t"), `\`)
	}
	if cont {
		return nil, fmt.Errorf("the file ends inside a continuation")
	}
	return out, nil
}

// isDirective reports whether a comment is a Dockerfile parser directive (# syntax=…, # escape=…).
func isDirective(comment string) bool {
	k, _, _ := strings.Cut(strings.TrimSpace(strings.TrimPrefix(comment, "#")), "=")
	k = strings.ToLower(strings.TrimSpace(k))
	return k == "syntax" || k == "escape" || k == "check"
}

// checkArgv requires every argument to be a single, newline-free, NUL-free element.
func checkArgv(what string, argv []string) error {
	for i, a := range argv {
		if strings.ContainsAny(a, "\n\r\x00") {
			return fmt.Errorf("%s[%d] = %q holds a line break or NUL", what, i, a)
		}
	}
	return nil
}

// mountFields parses a --mount value as docker does: one CSV record of key=value fields or bare
// flags.
func mountFields(arg string) (map[string]string, error) {
	r := csv.NewReader(strings.NewReader(arg))
	rec, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("--mount %q: %v", arg, err)
	}
	if _, err := r.Read(); err == nil {
		return nil, fmt.Errorf("--mount %q: more than one CSV record", arg)
	}
	out := map[string]string{}
	for _, f := range rec {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			v = "true" // a bare flag such as readonly
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("--mount %q: field %q given twice", arg, k)
		}
		out[k] = v
	}
	return out, nil
}

// flagValues returns the values of every "flag value" pair in args.
func flagValues(args []string, flag string) []string {
	var out []string
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag {
			out = append(out, args[i+1])
			i++
		}
	}
	return out
}

// checkArtifactGrammar parses every artifact in its own grammar.
func checkArtifactGrammar(t testing.TB, arts []render.Artifact) {
	t.Helper()
	for _, a := range arts {
		name := goldenPath(a)
		var err error
		switch {
		case strings.HasSuffix(a.Name, ".json"):
			err = checkJSON(a.Data)
		case strings.HasSuffix(a.Name, ".yaml"):
			err = checkYAML(a.Data)
		case strings.HasSuffix(a.Name, "Dockerfile"):
			_, err = dockerfileInstructionList(a.Data)
		}
		if err != nil {
			t.Errorf("%s: %v\n%s", name, err, a.Data)
		}
	}
	pol := artifactData(t, arts, render.NetdDir+"/"+policy.File)
	if _, err := policy.Parse(pol); err != nil {
		t.Errorf("%s: %v", policy.File, err)
	}
	rs := runSpecOf(t, arts)
	for what, argv := range map[string][]string{"netd": rs.Netd.Argv(), "agent": rs.Agent.Argv(), "shell": rs.Shell} {
		if err := checkArgv(what, argv); err != nil {
			t.Error(err)
		}
	}
	for _, args := range [][]string{rs.Netd.Args, rs.Agent.Args} {
		for _, m := range flagValues(args, "--mount") {
			if _, err := mountFields(m); err != nil {
				t.Error(err)
			}
		}
	}
}
