package project

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/aboxhq/abox/internal/approval"
	"github.com/aboxhq/abox/internal/secrets"
)

// TestRequiredSecrets: the workspace's and the approved manifest's needs together; a corrupt
// approval is refused, a broken manifest or custom-servers.yaml is a typed error.
func TestRequiredSecrets(t *testing.T) {
	ws, ps := fixture(t, good+"env_secrets:\n  DB_URL: db.url\n")
	approved := good + "env_secrets:\n  OLD_TOKEN: old.token\n"
	if err := approval.Record(ps.Project(ws), []byte(approved)); err != nil {
		t.Fatal(err)
	}
	need, err := RequiredSecrets(ws, ps, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if got := secrets.Names(need); len(got) != 2 || got[0] != "db.url" || got[1] != "old.token" {
		t.Errorf("RequiredSecrets = %v, want db.url and old.token", got)
	}

	os.WriteFile(ps.Project(ws).Approved(), []byte("version: [1"), 0o600)
	if _, err := RequiredSecrets(ws, ps, t.TempDir()); !errors.Is(err, approval.ErrCorrupt) {
		t.Errorf("corrupt approval: %v, want ErrCorrupt", err)
	}
	os.Remove(ps.Project(ws).Approved())

	os.WriteFile(ps.CustomServersFile(), []byte("bogus: [1\n"), 0o600)
	var ce *ConfigError
	if _, err := RequiredSecrets(ws, ps, t.TempDir()); !errors.As(err, &ce) {
		t.Errorf("broken custom-servers.yaml: %v, want a ConfigError", err)
	}
	os.WriteFile(filepath.Join(ws, "agentbox.yaml"), []byte("version: 1\nbogus: 1\n"), 0o644)
	var me *ManifestError
	if _, err := RequiredSecrets(ws, ps, t.TempDir()); !errors.As(err, &me) {
		t.Errorf("broken manifest: %v, want a ManifestError", err)
	}
}
