package isolate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// Account is a uid and gid git runs as, and the home directory it reads the user's own git
// config from.
type Account struct {
	UID, GID int
	Home     string
}

// WorkspaceAccount is who runs git in the user's repository at ws: nobody but abox itself,
// unless abox runs as root and someone else owns the repository. Then it is the owner: abox
// never writes the user's repository as root (every object, ref and checked-out file would be
// root's afterwards), and never runs the user's own git config with root's privileges.
func WorkspaceAccount(ws string) (*Account, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	fi, err := os.Lstat(ws)
	if err != nil {
		return nil, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st.Uid == 0 {
		return nil, nil
	}
	a := &Account{UID: int(st.Uid), GID: int(st.Gid)}
	if u, err := user.LookupId(strconv.Itoa(a.UID)); err == nil {
		a.Home = u.HomeDir
	}
	return a, nil
}

// credential makes cmd run as a, with no supplementary group of abox's.
func (a *Account) credential() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(a.UID), Gid: uint32(a.GID), Groups: []uint32{}}}
}

// home is the HOME git runs with as a.
func (a *Account) home() string {
	if a.Home == "" {
		return "/nonexistent"
	}
	return a.Home
}

// hostAccount is who the user's repository's git commands run as ([WorkspaceAccount]), computed
// once.
func (r *Repo) hostAccount() (*Account, error) {
	if r.Host != nil || r.hostKnown {
		return r.Host, nil
	}
	a, err := WorkspaceAccount(r.Project.Workspace)
	if err != nil {
		return nil, fmt.Errorf("finding who owns %s: %w", r.Project.Workspace, err)
	}
	r.Host, r.hostKnown = a, true
	return a, nil
}

// hostTemp makes a private directory the host's git commands can use: in the project's state
// when they run as abox, else in the system's temporary directory, owned by their account (it
// cannot reach abox's state). Only abox and that account can enter it.
func (r *Repo) hostTemp(prefix string) (string, error) {
	a, err := r.hostAccount()
	if err != nil {
		return "", err
	}
	if a == nil {
		if err := os.MkdirAll(r.Project.Dir, 0o700); err != nil {
			return "", err
		}
		return os.MkdirTemp(r.Project.Dir, "."+prefix+"-*")
	}
	dir, err := os.MkdirTemp("", "abox-"+prefix+"-*")
	if err != nil {
		return "", err
	}
	if err := os.Chown(dir, a.UID, a.GID); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// giveHost hands a file abox wrote in a [Repo.hostTemp] directory to the host's account.
func (r *Repo) giveHost(path string) error {
	a, err := r.hostAccount()
	if err != nil || a == nil {
		return err
	}
	return os.Lchown(path, a.UID, a.GID)
}

// giveTree gives every entry under dir, dir included, to uid:gid, following no symlink.
func giveTree(dir string, uid, gid int) error {
	return filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}

// ErrOwner is a clone abox cannot give to the agent's uid: it does not run as root, and is not
// that uid.
var ErrOwner = errors.New("the clone cannot be given to the agent")

// own gives the clone at dir to o.Owner, when it names someone other than abox.
func own(dir string, o *Account) error {
	if o == nil || o.UID == os.Geteuid() {
		return nil
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: it runs as uid %d:%d and abox as uid %d, which cannot give away files", ErrOwner, o.UID, o.GID, os.Geteuid())
	}
	return giveTree(dir, o.UID, o.GID)
}
