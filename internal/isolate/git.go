package isolate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// maxOutput bounds what one git command may print into abox's memory.
const maxOutput = 64 << 20

// hostOverrides are given to every git command abox runs in the user's repository: whatever
// the branch holds, fetching, diffing and merging it runs no hook and no driver.
var hostOverrides = []string{
	"core.hooksPath=/dev/null",
	"core.fsmonitor=false",
	"diff.external=",
	"fetch.recurseSubmodules=false",
	"submodule.recurse=false",
	"fetch.fsckObjects=true",
	"transfer.fsckObjects=true",
	"fetch.writeCommitGraph=false",
	"gc.auto=0",
	"maintenance.auto=false",
	"protocol.file.allow=always",
}

// cloneOverrides are given to every git command run in a clone, on top of the config abox
// writes there ([cloneConfig]) and the empty environment ([cloneEnv]).
var cloneOverrides = []string{
	"core.hooksPath=/dev/null",
	"core.fsmonitor=false",
	"core.untrackedCache=false",
	"core.attributesFile=/dev/null",
	"core.excludesFile=/dev/null",
	"submodule.recurse=false",
	"diff.external=",
	"gc.auto=0",
	"maintenance.auto=false",
	"commit.gpgSign=false",
}

// cloneConfig is the whole of a clone's .git/config, rewritten before every command abox runs
// there: the agent's edits to it never reach the host's git.
const cloneConfig = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n"

// identity is who abox's own commits are by.
var identity = []string{
	"GIT_AUTHOR_NAME=abox", "GIT_AUTHOR_EMAIL=abox@localhost",
	"GIT_COMMITTER_NAME=abox", "GIT_COMMITTER_EMAIL=abox@localhost",
}

// git is one git invocation.
type git struct {
	dir   string   // working directory
	args  []string // after the -c overrides
	env   []string
	stdin io.Reader
	// stdout, when set, takes the command's output as it comes, unbounded; run then returns
	// none. The writer bounds what it keeps.
	stdout io.Writer
	as     *Account // who it runs as; nil: abox itself
}

// GitError is a git command that failed.
type GitError struct {
	Args   []string
	Code   int
	Stderr string
}

func (e *GitError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return fmt.Sprintf("git %s: exit %d: %s", strings.Join(command(e.Args), " "), e.Code, msg)
}

// command is args without abox's -c overrides and --git-dir/--work-tree, for messages.
func command(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-c":
			i++
		case strings.HasPrefix(a, "--git-dir=") || strings.HasPrefix(a, "--work-tree="):
		default:
			out = append(out, a)
		}
	}
	return out
}

// run runs g with its own deadline, which starts now.
func (r *Repo) run(ctx context.Context, g git) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout())
	defer cancel()
	cmd := exec.CommandContext(ctx, r.gitPath(), g.args...)
	cmd.Dir = g.dir
	cmd.Env = g.env
	cmd.Stdin = g.stdin
	if g.as != nil {
		cmd.SysProcAttr = g.as.credential()
	}
	var out, errb capped
	out.left, errb.left = maxOutput, 1<<20
	cmd.Stdout, cmd.Stderr = &out, &errb
	if g.stdout != nil {
		cmd.Stdout = g.stdout
	}
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if out.over {
		return nil, fmt.Errorf("git %s printed more than %d bytes", g.args[0], maxOutput)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("git %s: %w", strings.Join(command(g.args), " "), ctx.Err())
		}
		return out.Bytes(), &GitError{Args: g.args, Code: ee.ExitCode(), Stderr: errb.String()}
	}
	if err != nil {
		return nil, fmt.Errorf("running git: %w", err)
	}
	return out.Bytes(), nil
}

// capped is a buffer that keeps at most left bytes and notes that more came.
type capped struct {
	bytes.Buffer
	left int
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if len(p) > c.left {
		c.over = true
		c.Buffer.Write(p[:c.left])
		c.left = 0
		return len(p), nil
	}
	c.left -= len(p)
	return c.Buffer.Write(p)
}

// host runs git in the user's repository, with the user's own config (it is theirs) but none of
// the caller's GIT_* variables, and with [hostOverrides], as the repository's owner
// ([WorkspaceAccount]).
func (r *Repo) host(ctx context.Context, args ...string) ([]byte, error) {
	return r.hostGit(ctx, git{args: args})
}

// hostIn is host with stdin.
func (r *Repo) hostIn(ctx context.Context, stdin string, args ...string) ([]byte, error) {
	return r.hostGit(ctx, git{args: args, stdin: strings.NewReader(stdin)})
}

// hostIndex is host with a private index file, so the user's index is never touched.
func (r *Repo) hostIndex(ctx context.Context, index string, args ...string) ([]byte, error) {
	return r.hostGit(ctx, git{args: args, env: append([]string{"GIT_INDEX_FILE=" + index}, identity...)})
}

// hostGit completes g, which holds the command and extra environment, for the user's
// repository.
func (r *Repo) hostGit(ctx context.Context, g git) ([]byte, error) {
	as, err := r.hostAccount()
	if err != nil {
		return nil, err
	}
	g.dir, g.as = r.Project.Workspace, as
	g.args = withOverrides(hostOverrides, g.args)
	g.env = append(hostEnv(as), g.env...)
	return r.run(ctx, g)
}

// inClone runs git in the clone at dir after [sanitize] has made it safe to. The clone's own
// config is the one abox wrote; the environment is built from nothing.
func (r *Repo) inClone(ctx context.Context, dir string, args ...string) ([]byte, error) {
	pre := []string{"--git-dir=" + filepath.Join(dir, ".git"), "--work-tree=" + dir}
	ov := append(append([]string{}, cloneOverrides...), "safe.directory="+dir)
	return r.run(ctx, git{dir: dir, args: append(pre, withOverrides(ov, args)...), env: cloneEnv()})
}

func withOverrides(ov, args []string) []string {
	out := make([]string, 0, 2*len(ov)+len(args))
	for _, o := range ov {
		out = append(out, "-c", o)
	}
	return append(out, args...)
}

// hostEnv is the caller's environment without GIT_* variables, which could point git at
// another repository, index or object store; as's home when git runs as someone else.
func hostEnv(as *Account) []string {
	var env []string
	for _, kv := range os.Environ() {
		switch {
		case strings.HasPrefix(kv, "GIT_"):
		case as != nil && (strings.HasPrefix(kv, "HOME=") || strings.HasPrefix(kv, "XDG_CONFIG_HOME=")):
		default:
			env = append(env, kv)
		}
	}
	if as != nil {
		env = append(env, "HOME="+as.home())
	}
	return append(env, "GIT_TERMINAL_PROMPT=0", "GIT_NO_REPLACE_OBJECTS=1", "LC_ALL=C")
}

// cloneEnv is the whole environment of git in a clone: no system or global config, no
// system attributes, no replace refs, no prompt, abox's identity.
func cloneEnv() []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=/nonexistent", "LC_ALL=C",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_ATTR_NOSYSTEM=1",
		"GIT_NO_REPLACE_OBJECTS=1", "GIT_TERMINAL_PROMPT=0", "GIT_NO_LAZY_FETCH=1",
	}
	return append(env, identity...)
}

// Bounds of the check of a clone's .git.
const maxGitEntries = 1_000_000

// pointers are files in .git that make git read another repository or rewrite history; a clone
// abox made has none, so any found after a run was planted.
var pointers = []string{"objects/info/alternates", "objects/info/http-alternates", "info/grafts", "commondir", "config.worktree", "gitdir"}

// sanitize makes the clone at dir safe to run git in: .git must be a real directory holding only
// directories and regular files (no symlink, FIFO, socket or device), the files that point git
// elsewhere are removed, and .git/config is replaced by [cloneConfig]. It fails closed.
func sanitize(dir string) error {
	gd := filepath.Join(dir, ".git")
	st, err := os.Lstat(gd)
	if err != nil {
		return fmt.Errorf("the clone has no .git directory: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("the clone's .git is not a directory (%s): refusing to use it", st.Mode().Type())
	}
	n := 0
	err = filepath.WalkDir(gd, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if n++; n > maxGitEntries {
			return fmt.Errorf("the clone's .git holds more than %d entries", maxGitEntries)
		}
		if t := d.Type(); t != 0 && !t.IsDir() {
			rel, _ := filepath.Rel(gd, p)
			return fmt.Errorf("the clone's .git holds a %s at %s: refusing to use it", t, rel)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("checking the clone: %w", err)
	}
	for _, p := range pointers {
		if err := os.Remove(filepath.Join(gd, p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("checking the clone: %w", err)
		}
	}
	cfg := filepath.Join(gd, "config")
	if err := os.Remove(cfg); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("rewriting the clone's config: %w", err)
	}
	f, err := os.OpenFile(cfg, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("rewriting the clone's config: %w", err)
	}
	_, werr := f.WriteString(cloneConfig)
	if err := errors.Join(werr, f.Close()); err != nil {
		return fmt.Errorf("rewriting the clone's config: %w", err)
	}
	return nil
}

func trim(b []byte) string { return strings.TrimSpace(string(b)) }
