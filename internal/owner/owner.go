// Package owner decides who the agent runs as: the uid and gid that own the workspace.
//
// The agent writes the live workspace, so what it writes must belong to the person whose project
// it is, and git inside the sandbox must trust the repository (it refuses one owned by another
// uid: "detected dubious ownership"). A fixed uid works for one user of one machine; CI runners,
// second users and servers where people work as root each own their checkouts differently. So
// the agent user of a project's image has the workspace owner's uid and gid, read at `abox up`
// and checked again at every run, unless config.yaml's agent.uid/agent.gid say otherwise (for a
// checkout owned by root on a server, say).
//
// The agent never runs as uid 0 or gid 0: a workspace owned by root, with no override, is
// refused before anything is built or started. netd's serving uid moves aside when the agent's
// would be it (policy.NetdUIDFor), so no owner can make the agent netd.
package owner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/render"
)

// ErrRootOwned marks a workspace owned by uid or gid 0 with no override in config.yaml.
var ErrRootOwned = errors.New("owned by root")

// RootOwnedError says which owner made the workspace unusable.
type RootOwnedError struct {
	Workspace string
	UID, GID  int
}

func (e *RootOwnedError) Error() string {
	what := "uid 0 (root)"
	if e.UID != 0 {
		what = fmt.Sprintf("gid 0 (group root; uid %d)", e.UID)
	}
	return fmt.Sprintf("the workspace %s is owned by %s, and abox never runs the agent as root", e.Workspace, what)
}

func (e *RootOwnedError) Unwrap() error { return ErrRootOwned }

// Stat returns the uid and gid that own path.
type Stat func(path string) (uid, gid int, err error)

// StatOwner is [Stat] for the real filesystem; it follows no symlink at the workspace itself. A
// workspace that does not exist yet (`abox init` creates it) will be this process's.
func StatOwner(path string) (int, int, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return os.Geteuid(), os.Getegid(), nil
	}
	if err != nil {
		return 0, 0, err
	}
	return ownerOf(fi)
}

func ownerOf(fi fs.FileInfo) (int, int, error) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, fmt.Errorf("no owner information for %s", fi.Name())
	}
	return int(st.Uid), int(st.Gid), nil
}

// Resolve returns the identity the agent of the workspace ws runs as: agent.uid and agent.gid
// of config.yaml where set, the owner's uid and gid otherwise. uid 0 or gid 0, however it came
// about, is a *[RootOwnedError] (config validation refuses 0 in the override itself).
func Resolve(ws string, override config.Agent, stat Stat) (render.Identity, error) {
	uid, gid, err := stat(ws)
	if err != nil {
		return render.Identity{}, fmt.Errorf("reading the owner of the workspace: %w", err)
	}
	if override.UID != nil {
		uid = *override.UID
	}
	if override.GID != nil {
		gid = *override.GID
	}
	if uid == 0 || gid == 0 {
		return render.Identity{}, &RootOwnedError{Workspace: ws, UID: uid, GID: gid}
	}
	return render.Identity{UID: uid, GID: gid}, nil
}

// CanWrite reports whether id may create files in the directory dir, by its mode bits (the
// agent has no supplementary groups and no capability that would bypass them), and when not,
// why. ACLs are not read.
func CanWrite(dir string, id render.Identity) (bool, string) {
	fi, err := os.Stat(dir)
	if err != nil {
		return false, err.Error()
	}
	if !fi.IsDir() {
		return false, dir + " is not a directory"
	}
	uid, gid, err := ownerOf(fi)
	if err != nil {
		return false, err.Error()
	}
	mode := fi.Mode().Perm()
	var bits fs.FileMode
	switch {
	case uid == id.UID:
		bits = mode >> 6
	case gid == id.GID:
		bits = mode >> 3
	default:
		bits = mode
	}
	if bits&3 == 3 { // write and search
		return true, ""
	}
	return false, fmt.Sprintf("%s is owned by %d:%d with mode %04o: uid %d (gid %d) cannot create files in it", dir, uid, gid, mode, id.UID, id.GID)
}
