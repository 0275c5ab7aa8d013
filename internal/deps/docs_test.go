package deps

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPackageDocs: every package has a doc comment, and a library package of several files
// keeps it in doc.go (STYLE §3.8), where a reader looks for why the package exists.
func TestPackageDocs(t *testing.T) {
	out := goCmd(t, nil, "list", "-json=ImportPath,Name,Dir,Doc,GoFiles", module+"/...")
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p struct {
			ImportPath, Name, Dir, Doc string
			GoFiles                    []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("decoding go list: %v", err)
		}
		name := rel(p.ImportPath)
		if p.Doc == "" {
			t.Errorf("%s has no package doc: say why it exists", name)
			continue
		}
		if p.Name == "main" || len(p.GoFiles) < 2 {
			continue
		}
		data, err := os.ReadFile(filepath.Join(p.Dir, "doc.go"))
		if err != nil || !strings.HasPrefix(string(data), "// Package "+p.Name+" ") {
			t.Errorf("%s has %d files but no doc.go that opens with its package doc", name, len(p.GoFiles))
		}
	}
}
