package render_test

import (
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"

	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/render"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/<case>/golden")

// Fixed inputs, so that goldens do not depend on the machine that renders them.
const (
	testVersion   = "0.0.0-test"
	testHome      = "/home/u"
	testWorkspace = "/home/u/proj"
)

var testPaths = paths.Paths{Config: "/home/u/.config/abox", State: "/home/u/.local/state/abox"}

// A case directory holds agentbox.yaml and, optionally:
//
//	config.yaml          config.yaml (else config.Default())
//	custom-servers.yaml  custom-servers.yaml
//	catalog.yaml         a fake Docker MCP catalog (v3, registry: name → entry); none: no catalog
//	spec.yaml            the Spec fields the CLI reads from the host (see specExtra)
//
// and golden/, the expected artifacts: authoritative ones by name, review ones under
// golden/.devcontainer/, and runspec.args.txt, the two docker argvs one argument per line.
const casesDir = "testdata"

// specExtra is spec.yaml: what the CLI would find on the host.
type specExtra struct {
	NPMRegistry string `yaml:"npm_registry"`
	CACerts     []struct {
		Name   string `yaml:"name"`
		SHA256 string `yaml:"sha256"`
	} `yaml:"ca_certs"`
}

// fakeCatalog is a catalog read from a v3 catalog file, resolved as internal/catalog does for
// catalog (non-custom) entries: tools from tools[].name (under the entry's prefix), Raw unless
// the entry is remote.
type fakeCatalog map[string]map[string]any

func (c fakeCatalog) Server(name string) (render.CatalogServer, bool) {
	raw, ok := c[name]
	if !ok {
		return render.CatalogServer{}, false
	}
	var cs render.CatalogServer
	tools, _ := raw["tools"].([]any)
	for _, t := range tools {
		if m, ok := t.(map[string]any); ok {
			if n, _ := m["name"].(string); n != "" {
				cs.Tools = append(cs.Tools, n)
			}
		}
	}
	if p, _ := raw["prefix"].(string); p != "" {
		cs.Prefix = p
		for i, t := range cs.Tools {
			cs.Tools[i] = p + "__" + t
		}
	}
	if _, remote := raw["remote"]; !remote && raw["type"] != "remote" {
		cs.Raw = raw
	}
	return cs, true
}

// caseNames lists the case directories under testdata (everything but fuzz/).
func caseNames(t testing.TB) []string {
	t.Helper()
	ents, err := os.ReadDir(casesDir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		if e.IsDir() && e.Name() != "fuzz" {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		t.Fatal("no cases under testdata")
	}
	return names
}

// loadSpec builds the Spec of a case from its input files. Every call parses the files anew, so
// two calls share no map.
func loadSpec(t testing.TB, name string) render.Spec {
	t.Helper()
	dir := filepath.Join(casesDir, name)
	read := func(file string) []byte {
		data, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return data
	}
	m, err := manifest.Parse(read(manifest.FileName), manifest.FileName)
	if err != nil {
		t.Fatalf("case %s: %v", name, err)
	}
	cfg := config.Default()
	if data := read("config.yaml"); data != nil {
		if cfg, err = config.Parse(data, "config.yaml"); err != nil {
			t.Fatalf("case %s: %v", name, err)
		}
	}
	s := render.Spec{
		Version: testVersion, Manifest: m, Config: cfg, Paths: testPaths,
		Project: testPaths.Project(testWorkspace), Home: testHome, Custom: config.CustomServers{},
	}
	if data := read("custom-servers.yaml"); data != nil {
		if s.Custom, err = config.ParseCustomServers(data, "custom-servers.yaml"); err != nil {
			t.Fatalf("case %s: %v", name, err)
		}
	}
	if data := read("catalog.yaml"); data != nil {
		var doc struct {
			Registry fakeCatalog `yaml:"registry"`
		}
		if err := yaml.Unmarshal(data, &doc); err != nil {
			t.Fatalf("case %s: catalog.yaml: %v", name, err)
		}
		s.Catalog = doc.Registry
	}
	if data := read("spec.yaml"); data != nil {
		var x specExtra
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := dec.Decode(&x); err != nil {
			t.Fatalf("case %s: spec.yaml: %v", name, err)
		}
		s.NPMRegistry = x.NPMRegistry
		for _, c := range x.CACerts {
			s.CACerts = append(s.CACerts, render.File{Name: c.Name, SHA256: c.SHA256})
		}
	}
	return s
}

func mustRender(t testing.TB, s render.Spec) []render.Artifact {
	t.Helper()
	arts, err := render.Render(s)
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	return arts
}

// goldenPath is where an artifact's golden lives, relative to golden/.
func goldenPath(a render.Artifact) string {
	if a.Review {
		return render.ReviewDir + "/" + a.Name
	}
	return a.Name
}

// argsFile is the derived golden of runspec.json's argvs, one argument per line.
const argsFile = "runspec.args.txt"

// argsText renders a runspec's two docker argvs one argument per line, so a golden diff shows
// exactly which argument changed.
func argsText(t testing.TB, arts []render.Artifact) []byte {
	t.Helper()
	rs := runSpecOf(t, arts)
	var b strings.Builder
	b.WriteString("# netd: docker argv\n")
	for _, a := range rs.Netd.Argv() {
		b.WriteString(a + "\n")
	}
	b.WriteString("# agent: docker argv, completed per run (masks, -p, --resume, the prompt)\n")
	for _, a := range rs.Agent.Argv() {
		b.WriteString(a + "\n")
	}
	return []byte(b.String())
}

// goldenFiles is what golden/ of a case must hold.
func goldenFiles(t testing.TB, arts []render.Artifact) map[string][]byte {
	t.Helper()
	want := map[string][]byte{argsFile: argsText(t, arts)}
	for _, a := range arts {
		p := goldenPath(a)
		if _, dup := want[p]; dup {
			t.Fatalf("two artifacts at %s", p)
		}
		want[p] = a.Data
	}
	return want
}

func TestGolden(t *testing.T) {
	for _, name := range caseNames(t) {
		t.Run(name, func(t *testing.T) {
			got := goldenFiles(t, mustRender(t, loadSpec(t, name)))
			dir := filepath.Join(casesDir, name, "golden")
			if *update {
				writeGolden(t, dir, got)
				return
			}
			on := readTree(t, dir)
			if diff := cmp.Diff(sortedNames(on), sortedNames(got)); diff != "" {
				t.Errorf("golden files differ from the rendered artifacts (-golden +rendered):\n%s\nrun go test ./internal/render -update", diff)
			}
			for _, p := range sortedNames(got) {
				want, ok := on[p]
				if !ok {
					continue
				}
				if diff := cmp.Diff(string(want), string(got[p])); diff != "" {
					t.Errorf("%s mismatch (-golden +rendered):\n%s", p, diff)
				}
			}
		})
	}
}

func writeGolden(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	for p, data := range files {
		path := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// readTree reads every regular file under dir, keyed by slash path relative to dir.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		out[filepath.ToSlash(rel)] = data
		return err
	})
	if err != nil {
		t.Fatalf("reading goldens: %v (run go test ./internal/render -update)", err)
	}
	return out
}

func sortedNames(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestDeterministic renders every case many times, each time from freshly parsed inputs, and
// requires byte-identical artifacts: no map iteration order may reach an artifact.
func TestDeterministic(t *testing.T) {
	n := 50
	if testing.Short() {
		n = 5
	}
	for _, name := range caseNames(t) {
		t.Run(name, func(t *testing.T) {
			first := mustRender(t, loadSpec(t, name))
			same := loadSpec(t, name)
			for i := 0; i < n; i++ {
				s := same
				if i%2 == 1 {
					s = loadSpec(t, name)
				}
				again := mustRender(t, s)
				if !sameArtifacts(first, again) {
					t.Fatalf("render %d differs from the first (-first +again):\n%s", i+1, cmp.Diff(textOf(first), textOf(again)))
				}
			}
		})
	}
}

func sameArtifacts(a, b []render.Artifact) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Mode != b[i].Mode || a[i].Review != b[i].Review || !bytes.Equal(a[i].Data, b[i].Data) {
			return false
		}
	}
	return true
}

// textOf shows artifacts as text, for a readable diff.
func textOf(arts []render.Artifact) []string {
	out := make([]string, len(arts))
	for i, a := range arts {
		out[i] = fmt.Sprintf("%s %v review=%v\n%s", a.Name, a.Mode, a.Review, a.Data)
	}
	return out
}
