package isolate

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestRootKeepsTheUsersRepository runs abox as root on a repository a user owns, as on a
// server or in CI: every git command in the user's repository runs as its owner, the clone is
// the agent's, and after a whole run, merge included, nothing in the user's repository or
// working tree belongs to root.
func TestRootKeepsTheUsersRepository(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: abox as root on a repository another uid owns") // CI runs as root
	}
	f := newFixture(t)
	const uid, gid = 1000, 1000
	for d := filepath.Dir(f.ws); d != "/" && strings.HasPrefix(d, os.TempDir()); d = filepath.Dir(d) {
		os.Chmod(d, 0o755) // the user reaches their own repository
	}
	if err := giveTree(f.ws, uid, gid); err != nil {
		t.Fatal(err)
	}
	a, err := WorkspaceAccount(f.ws)
	if err != nil || a == nil || a.UID != uid || a.GID != gid {
		t.Fatalf("WorkspaceAccount = %+v, %v; want uid %d gid %d", a, err, uid, gid)
	}
	a.Home = os.Getenv("HOME") // the fixture's, with the user's identity
	f.repo.Host = a
	run := f.create("own1", CreateOptions{Owner: &Account{UID: uid, GID: gid}})
	clone := f.repo.Project.Clone(run.ID)
	if owners := notOwnedBy(t, clone, uid); len(owners) > 0 {
		t.Errorf("the clone holds entries the agent does not own: %v", owners)
	}
	writeFile(t, filepath.Join(clone, "agent.txt"), "from the agent\n")
	if err := giveTree(clone, uid, gid); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := f.repo.Collect(ctx, run.ID); err != nil {
		t.Fatalf("Collect: %v", err)
	}
	if _, err := f.repo.Merge(ctx, run.ID, MergeOptions{}); err != nil {
		t.Fatalf("Merge: %v", err)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "agent.txt")); err != nil {
		t.Fatalf("the merged file is not in the working tree: %v", err)
	}
	if owners := notOwnedBy(t, f.ws, uid); len(owners) > 0 {
		t.Errorf("root wrote into the user's repository: %v", owners)
	}
}

// notOwnedBy lists the entries under dir whose owner is not uid.
func notOwnedBy(t *testing.T, dir string, uid int) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != uid {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
