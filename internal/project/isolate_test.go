package project

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/aboxhq/abox/internal/secrets"
)

// TestIsolated: the isolated runs are the project's, watched with config.yaml's patterns and
// then the manifest's, and neither list is changed by building the other.
func TestIsolated(t *testing.T) {
	ws, ps := fixture(t, good+"mounts:\n  watch: [\"ci/**\"]\n")
	p, err := Load(ws, ps)
	if err != nil {
		t.Fatal(err)
	}
	p.Config.Defaults.Watch = []string{"Makefile"}
	r := p.Isolated()
	if r.Project != p.State || !slices.Equal(r.Watch, []string{"Makefile", "ci/**"}) {
		t.Errorf("Isolated = %+v, want the project's state and Makefile, ci/**", r)
	}
	r.Watch[0] = "changed"
	if p.Config.Defaults.Watch[0] != "Makefile" {
		t.Errorf("Isolated shares its patterns with config.yaml's")
	}
}

// TestRequiredSecretsAt: the project at or above a directory, and none outside a project.
func TestRequiredSecretsAt(t *testing.T) {
	ws, ps := fixture(t, good+"env_secrets:\n  DB_URL: db.url\n")
	sub := filepath.Join(ws, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	need, err := RequiredSecretsAt(sub, ps, t.TempDir())
	if got := secrets.Names(need); err != nil || len(got) != 1 || got[0] != "db.url" {
		t.Errorf("RequiredSecretsAt(sub) = %v, %v; want db.url", got, err)
	}
	need, err = RequiredSecretsAt(t.TempDir(), ps, t.TempDir())
	if err != nil || need != nil {
		t.Errorf("RequiredSecretsAt(no project) = %v, %v; want none", need, err)
	}
}
