package cli

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestHintsNameRealCommands: every abox command a hint or message names in backquotes (`abox
// gateway up --force …`), anywhere in abox's packages, is a command of this tree and takes the
// flags the hint gives it. A command renamed or a flag dropped in a refactor would otherwise
// leave a hint that sends the user to a command that does not exist.
func TestHintsNameRealCommands(t *testing.T) {
	root := newRootCmd(&App{})
	seen := 0
	for _, ref := range commandRefs(t, "..") {
		seen++
		path, flags := splitCommandRef(ref.text)
		c, rest, err := root.Find(path)
		if err != nil || len(rest) > 0 || c == root && len(path) > 0 {
			t.Errorf("%s: `%s` names no abox command (%v, left %q)", ref.pos, ref.text, err, rest)
			continue
		}
		for _, f := range flags {
			if c.Flag(f) == nil && !(f == "help" || f == "version" && c == root) {
				t.Errorf("%s: `%s`: %s takes no --%s", ref.pos, ref.text, c.CommandPath(), f)
			}
		}
	}
	if seen < 100 {
		t.Fatalf("found %d command references in hints, want the ~200 of abox's packages: the scan is broken", seen)
	}
}

type commandRef struct{ pos, text string }

// commandRefs are the `abox …` references in the string literals of the non-test Go files
// under dir: from "`abox" to the closing backquote or the end of the literal (a hint built by
// concatenation names its argument in the next piece).
func commandRefs(t *testing.T, dir string) []commandRef {
	t.Helper()
	var refs []commandRef
	fset := token.NewFileSet()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			for _, m := range refRe.FindAllStringSubmatch(s, -1) {
				refs = append(refs, commandRef{pos: fset.Position(lit.Pos()).String(), text: "abox" + m[1]})
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return refs
}

var refRe = regexp.MustCompile("`abox( [^`]*)?(?:`|$)")

// pathWord is a word of a command's path; anything else (a placeholder such as SERVER or
// <run>, a format verb, a value) ends the path.
var pathWord = regexp.MustCompile(`^[a-z][a-z-]*$`)

// splitCommandRef splits "abox mcp add SERVER --tool NAME" into the command's path [mcp add]
// and the flags it names [tool].
func splitCommandRef(ref string) (path, flags []string) {
	words := strings.Fields(strings.TrimPrefix(ref, "abox"))
	inPath := true
	for _, w := range words {
		switch {
		case strings.HasPrefix(w, "--"):
			inPath = false
			name, _, _ := strings.Cut(strings.TrimPrefix(w, "--"), "=")
			flags = append(flags, strings.TrimRight(name, ",.;:)"))
		case inPath && pathWord.MatchString(w):
			path = append(path, w)
		default:
			inPath = false
		}
	}
	return path, flags
}
