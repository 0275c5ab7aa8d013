package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/aboxhq/abox/internal/termtext"
	"github.com/aboxhq/abox/internal/wsfile"
)

// MaxSize is the largest manifest abox reads.
const MaxSize = 4 << 20

// ErrNotFound is returned by [Find] when no manifest exists at or above a directory.
var ErrNotFound = errors.New("no " + FileName + " found")

// Problem is one located validation failure.
type Problem struct {
	Loc  string // "egress[2]", "run.timeout", or "line 4" for syntax errors
	Msg  string
	Hint string // how to fix it, when there is a specific fix
}

// Error is an invalid manifest: every problem found, each with its location.
type Error struct {
	Source   string // the file name as shown to the user
	Problems []Problem
}

func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = e.Source + ": " + p.Loc + ": " + p.Msg
	}
	return strings.Join(lines, "\n")
}

// Parse strictly decodes and validates a manifest. source names it in errors. The result has
// defaults applied.
func Parse(data []byte, source string) (*Manifest, error) {
	m, err := decode(data, source)
	if err != nil {
		return nil, err
	}
	if err := m.Validate(source); err != nil {
		return nil, err
	}
	d := m.WithDefaults()
	return &d, nil
}

// decode strictly decodes data without validating values.
func decode(data []byte, source string) (*Manifest, error) {
	if len(data) > MaxSize {
		return nil, &Error{Source: source, Problems: []Problem{{Loc: "file", Msg: fmt.Sprintf("is larger than %d bytes", MaxSize)}}}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Error{Source: source, Problems: []Problem{{Loc: "file", Msg: "is empty", Hint: "run `abox init` to write one"}}}
		}
		return nil, yamlError(source, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, &Error{Source: source, Problems: []Problem{{Loc: "file", Msg: "holds more than one YAML document"}}}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err == nil {
		if ps := NullKeys(&doc); len(ps) > 0 {
			return nil, &Error{Source: source, Problems: ps}
		}
	}
	return &m, nil
}

// NullKeys reports every mapping key under n that is null ("~", "null", or nothing at all, as
// in "? : x"), by line. yaml.v3 skips such an entry, value and all, even with KnownFields, so
// without this check a file could carry content that abox neither uses nor refuses.
func NullKeys(n *yaml.Node) []Problem {
	var out []Problem
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind == yaml.AliasNode && k.Alias != nil {
				k = k.Alias
			}
			if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!null" {
				out = append(out, Problem{Loc: fmt.Sprintf("line %d", n.Content[i].Line), Msg: "has a null key",
					Hint: "name the key or remove the entry; an entry with a null key would be ignored"})
			}
		}
	}
	if n.Kind != yaml.AliasNode {
		for _, c := range n.Content {
			out = append(out, NullKeys(c)...)
		}
	}
	return out
}

var yamlLine = regexp.MustCompile(`(?s)^(?:yaml: )?line (\d+): (.*)$`)

// yamlError turns a YAML decoding error into located problems. The decoder quotes keys and
// values from the file verbatim, so every message is made [Printable].
func yamlError(source string, err error) error {
	var te *yaml.TypeError
	msgs := []string{err.Error()}
	if errors.As(err, &te) {
		msgs = te.Errors
	}
	e := &Error{Source: source}
	for _, msg := range msgs {
		p := Problem{Loc: "file", Msg: strings.TrimPrefix(msg, "yaml: ")}
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			p.Loc, p.Msg = "line "+m[1], m[2]
		}
		if strings.HasPrefix(p.Msg, "field ") && strings.Contains(p.Msg, " not found in type ") {
			p.Msg = unknownField(p.Msg)
			p.Hint = "check the spelling against the manifest reference in README.md; unknown keys are refused so a typo cannot switch a control off"
		}
		p.Msg = termtext.Line(p.Msg)
		e.Problems = append(e.Problems, p)
	}
	return e
}

// unknownField rewrites yaml.v3's "field x not found in type manifest.T" as ""x" is not a known
// key".
func unknownField(msg string) string {
	f := strings.TrimPrefix(msg, "field ")
	if i := strings.LastIndex(f, " not found in type "); i >= 0 {
		return strconv.Quote(f[:i]) + " is not a known key"
	}
	return msg
}

// Load reads and parses the manifest at path.
func Load(path string) (*Manifest, []byte, error) {
	data, err := readLimited(path)
	if err != nil {
		return nil, nil, err
	}
	m, err := Parse(data, FileName)
	return m, data, err
}

// ReadFile reads the manifest at path as [Load] does, without parsing it: at most one byte more
// than [MaxSize], so that decoding reports a larger file; only a regular file, opened without
// blocking (the manifest is in the workspace, where the agent may leave a FIFO in its place).
func ReadFile(path string) ([]byte, error) { return readLimited(path) }

func readLimited(path string) ([]byte, error) {
	f, err := wsfile.Open(path, true)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w in %s", ErrNotFound, filepath.Dir(path))
		}
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return data, nil
}

// Find returns the workspace for start: the first directory at or above it holding a manifest.
// If none does, it returns start itself and ErrNotFound.
func Find(start string) (string, error) {
	abs, err := filepath.Abs(start)
	if err != nil {
		return "", err
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	for dir := abs; ; dir = filepath.Dir(dir) {
		if st, err := os.Stat(filepath.Join(dir, FileName)); err == nil && st.Mode().IsRegular() {
			return dir, nil
		}
		if dir == filepath.Dir(dir) {
			return abs, fmt.Errorf("%w in %s or any parent directory", ErrNotFound, abs)
		}
	}
}
