package config

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/termtext"
)

// Secret sources.
const (
	SecretOp     = "op"     // 1Password CLI reference
	SecretFile   = "file"   // a private file on the host
	SecretEnv    = "env"    // a host environment variable
	SecretPrompt = "prompt" // typed in, never written by abox
	SecretDocker = "docker" // already in the store; verified only
)

// Secrets is secrets.yaml: where each secret's value comes from. It holds references, never
// values.
type Secrets struct {
	Mappings []SecretMapping `yaml:"mappings"`
}

// SecretMapping names one secret and its source.
type SecretMapping struct {
	Secret      string `yaml:"secret"`
	Op          string `yaml:"op,omitempty"`
	File        string `yaml:"file,omitempty"`
	Env         string `yaml:"env,omitempty"`
	Source      string `yaml:"source,omitempty"`
	Description string `yaml:"description,omitempty"`
}

// Kind returns the mapping's source: Source if set, else inferred from the field that is set.
func (m SecretMapping) Kind() string {
	switch {
	case m.Source != "":
		return m.Source
	case m.Op != "":
		return SecretOp
	case m.File != "":
		return SecretFile
	case m.Env != "":
		return SecretEnv
	}
	return ""
}

// Lookup returns the mapping of secret, if any.
func (s *Secrets) Lookup(secret string) (SecretMapping, bool) {
	for _, m := range s.Mappings {
		if m.Secret == secret {
			return m, true
		}
	}
	return SecretMapping{}, false
}

// ParseSecrets strictly decodes and validates secrets.yaml.
func ParseSecrets(data []byte, source string) (*Secrets, error) {
	var s Secrets
	if err := decodeStrict(data, source, &s); err != nil {
		return nil, err
	}
	if err := s.Validate(source); err != nil {
		return nil, err
	}
	return &s, nil
}

// LoadSecrets reads secrets.yaml at path; a missing file is an empty mapping.
func LoadSecrets(path string) (*Secrets, error) {
	data, err := readFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return &Secrets{}, nil
	}
	if err != nil {
		return nil, err
	}
	return ParseSecrets(data, path)
}

// Validate checks every mapping.
func (s *Secrets) Validate(source string) error {
	var k checker
	seen := map[string]bool{}
	for i, m := range s.Mappings {
		loc := fmt.Sprintf("mappings[%d]", i)
		if !manifest.IsSecretName(m.Secret) {
			k.add(loc+".secret", "", "%q is not a valid secret name", m.Secret)
		} else if seen[m.Secret] {
			k.add(loc+".secret", "", "%q is mapped twice", m.Secret)
		}
		seen[m.Secret] = true
		k.secretSource(loc, m)
	}
	if len(k.problems) == 0 {
		return nil
	}
	return &manifest.Error{Source: source, Problems: k.problems}
}

func (k *checker) secretSource(loc string, m SecretMapping) {
	if err := manifest.CheckText(m.Description, 500); err != nil {
		k.add(loc+".description", "", "%v", err)
	}
	fields := map[string]string{SecretOp: m.Op, SecretFile: m.File, SecretEnv: m.Env}
	var set []string
	for _, f := range []string{SecretOp, SecretFile, SecretEnv} {
		if fields[f] != "" {
			set = append(set, f)
		}
	}
	if len(set) > 1 {
		k.add(loc, "keep one of "+strings.Join(set, ", "), "names more than one source: %s", strings.Join(set, ", "))
		return
	}
	switch m.Source {
	case "":
		if len(set) == 0 {
			k.add(loc, "set one of op, file, env, or source: prompt|docker", "has no source")
			return
		}
	case SecretOp, SecretFile, SecretEnv:
		if fields[m.Source] == "" {
			hint := "set " + m.Source
			if len(set) == 1 {
				hint += ", or remove source to use " + set[0]
			}
			k.add(loc, hint, "source %q needs its %s field", m.Source, m.Source)
			return
		}
	case SecretPrompt, SecretDocker:
		if len(set) != 0 {
			k.add(loc, "remove "+set[0]+" for source "+m.Source, "source %q takes no op, file or env", m.Source)
		}
		return
	default:
		k.add(loc+".source", "choose op, file, env, prompt or docker", "%q is not a known source", m.Source)
		return
	}
	switch m.Kind() {
	case SecretOp:
		k.opRef(loc+".op", m.Op)
	case SecretFile:
		k.hostPath(loc+".file", m.File)
	case SecretEnv:
		if !manifest.IsEnvName(m.Env) {
			k.add(loc+".env", "", "%q is not a valid environment variable name", m.Env)
		}
	}
}

// opRef checks a 1Password secret reference: op://vault/item[/section]/field. Names may hold
// spaces and non-ASCII letters, but nothing unprintable: the reference reaches op's argv and
// every message about the secret.
func (k *checker) opRef(loc, ref string) {
	parts := strings.Split(strings.TrimPrefix(ref, "op://"), "/")
	switch {
	case !strings.HasPrefix(ref, "op://") || len(parts) < 3 || slicesHasEmpty(parts):
		k.add(loc, "write op://vault/item/field", "%q is not a 1Password reference", ref)
	case termtext.Line(ref) != ref || len(ref) > 1024:
		k.add(loc, "", "%q is not a 1Password reference: it holds an unprintable character or is too long", ref)
	}
}

func slicesHasEmpty(parts []string) bool {
	for _, p := range parts {
		if p == "" {
			return true
		}
	}
	return false
}

// Select returns the mappings of names, in their order, or all of them when names is empty. A
// name secrets.yaml does not map is returned as unmapped, with no mappings.
func (s *Secrets) Select(names []string) (mappings []SecretMapping, unmapped string) {
	if len(names) == 0 {
		return s.Mappings, ""
	}
	for _, name := range names {
		mp, ok := s.Lookup(name)
		if !ok {
			return nil, name
		}
		mappings = append(mappings, mp)
	}
	return mappings, ""
}
