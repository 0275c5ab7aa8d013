//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aboxhq/abox/e2e/harness"
)

// Attacks on isolated runs (issue 21) from a hostile agent inside one: everything under the
// clone, .git included, is the agent's, and abox runs git there (as root here) after the run,
// then fetches the result into the user's repository. Every payload the agent plants creates a
// file in the test's marks directory, a host path outside every container: git on the host is
// the only thing that could create one.

// attackDirs makes the marks directory (writable by root's git in the clone and by the
// repository owner's git in the user's repository) and a directory outside the workspace
// holding a file no run may read, and returns both.
func attackDirs(t *testing.T, h *harness.H) (marks, outside string) {
	t.Helper()
	marks, outside = filepath.Join(h.Dir, "marks"), filepath.Join(h.Dir, "outside")
	for _, d := range []string{marks, outside} {
		if err := os.MkdirAll(d, 0o777); err != nil {
			t.Fatal(err)
		}
		os.Chmod(d, 0o777)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("OUTSIDE-ONLY-SECRET\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return marks, outside
}

// noMarks fails when a planted payload ran on the host.
func noMarks(t *testing.T, marks, when string) {
	t.Helper()
	ents, err := os.ReadDir(marks)
	if err != nil {
		t.Fatal(err)
	}
	var ran []string
	for _, e := range ents {
		ran = append(ran, e.Name())
	}
	if len(ran) > 0 {
		t.Errorf("%s: planted payloads ran on the host: %v", when, ran)
	}
}

// userObjectsLack fails when the user's repository holds text in any object, loose or packed,
// reachable or not.
func userObjectsLack(t *testing.T, h *harness.H, text, when string) {
	t.Helper()
	if strings.Contains(repoGit(t, h, "cat-file", "--batch-all-objects", "--batch"), text) {
		t.Errorf("%s: %q is in the user's objects", when, text)
	}
}

// notOwners lists what in the user's repository is not its owner's (uid 1000): the test's own
// agentbox.yaml, written as root, and whatever else is.
func notOwners(t *testing.T, h *harness.H) string {
	t.Helper()
	out, err := exec.Command("find", h.Workspace, "!", "-uid", "1000").CombinedOutput()
	if err != nil {
		t.Fatalf("find: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// notRootOwned fails when the user's repository holds anything not its owner's that it did not
// hold before: abox, root here, must run every git command there as the owner.
func notRootOwned(t *testing.T, h *harness.H, before, when string) {
	t.Helper()
	if got := notOwners(t, h); got != before {
		t.Errorf("%s: not owned by the repository's owner:\n%s\nwant only:\n%s", when, got, before)
	}
}

// plantScript is what the agent does to its clone: it commits some work of its own (hooks off,
// as its own hooks would touch a path it cannot reach), then plants every program git could
// run — hooks in .git/hooks and in a core.hooksPath of its own, core.fsmonitor, filter, diff
// and merge drivers with a .gitattributes selecting them, diff.external, a pager, editor, ssh,
// credential and gpg helper, uploadpack's pack-objects hook, an include of more — and
// alternates into a host repository, symlinks out of the repository, refs and a tag of its own,
// a FIFO, a file whose name holds terminal escapes and a newline, and a 1 GiB sparse file. It
// also reports what of the masked .env it sees, in the work tree and in history, and looks for
// the user's untracked file anywhere it can read.
func plantScript(marks, outside, userMarker string) string {
	hooks := "pre-commit prepare-commit-msg commit-msg post-commit post-checkout post-merge pre-merge-commit " +
		"reference-transaction post-index-change pre-auto-gc post-rewrite pre-push post-update fsmonitor-watchman"
	return strings.Join([]string{
		`set -u`,
		`[ -e .env ] && echo "env-present [$(cat .env)]" || echo env-absent`,
		`for c in $(git rev-list --all); do git show "$c:.env" 2>/dev/null | sed "s/^/env-history /"; done | sort -u`,
		// The user's tree could only be reached through a mount: look through every one.
		// (The marker is spelt in two halves: the prompt itself is in the session file.)
		`U1=` + shq(userMarker[:8]) + `; U2=` + shq(userMarker[8:]),
		`for m in $(awk '{print $5}' /proc/self/mountinfo | sort -u | grep -Ev '^/(proc|sys|dev)(/|$)|^/$'); do grep -rIl "$U1$U2" "$m" 2>/dev/null; done | sed "s/^/found-user-file /"`,
		`sed "s/^/mount /" /proc/self/mountinfo`,
		`echo work > work.txt && git add work.txt && git -c core.hooksPath=/dev/null -c user.name=agent -c user.email=agent@example.invalid commit --quiet -m "agent: work $(printf '\033]0;pwned\007\033[2J')"`,
		`git update-ref refs/heads/main HEAD && git tag v-agent HEAD && git update-ref refs/remotes/origin/main HEAD`,
		`M=` + shq(marks),
		`mkdir -p evilhooks`,
		`for h in ` + hooks + `; do printf '#!/bin/sh\ntouch %s/hook-%s\ncat >/dev/null\nexit 0\n' "$M" "$h" > .git/hooks/$h; printf '#!/bin/sh\ntouch %s/hookspath-%s\ncat >/dev/null\nexit 0\n' "$M" "$h" > evilhooks/$h; done`,
		`chmod +x .git/hooks/* evilhooks/*`,
		`printf '[core]\n\tfsmonitor = touch %s/included-fsmonitor; true\n' "$M" > .git/evil.gitconfig`,
		`cat >> .git/config <<EOF
[core]
	hooksPath = evilhooks
	fsmonitor = touch $M/fsmonitor; true
	pager = touch $M/pager; cat
	editor = touch $M/editor; true
	sshCommand = touch $M/ssh; true
	alternateRefsCommand = touch $M/alternate-refs; true
[filter "evil"]
	clean = touch $M/clean; cat
	smudge = touch $M/smudge; cat
	required = true
[filter "proc"]
	process = touch $M/process
[diff]
	external = touch $M/diff-external
[diff "evil"]
	textconv = touch $M/textconv; cat
	command = touch $M/diff-command
[merge "evil"]
	driver = touch $M/merge-driver
[commit]
	gpgSign = true
[gpg]
	program = touch $M/gpg
[credential]
	helper = !touch $M/credential
[uploadpack]
	packObjectsHook = touch $M/pack-objects-hook;
[include]
	path = evil.gitconfig
EOF`,
		`printf '* filter=evil diff=evil merge=evil\n*.proc filter=proc\n' > .gitattributes`,
		`echo "through the process filter" > x.proc`,
		`echo "the agent's uncommitted work" > work2.txt`,
		`echo ` + shq(filepath.Join(outside, "repo.git", "objects")) + ` > .git/objects/info/alternates`,
		`ln -s ` + shq(filepath.Join(outside, "secret")) + ` escape`,
		`ln -s ` + shq(outside) + ` escdir`,
		`ln -s ../../../../../../../../etc up`,
		`mkfifo pipe`,
		`touch "$(printf 'name\033[2J\033]0;pwned\007\nfake line.txt')"`,
		`truncate -s 1G big.bin`,
		`echo planted`,
	}, "\n")
}

// TestAttackIsolatedPlants: the agent plants everything git could run or follow into its clone
// (plantScript). Collect, `abox diff` (with --patch and --json), a refused `abox merge` and
// `abox merge --force` run none of it; the symlinks arrive as links and the outside file's
// content is in none of the user's objects; the 1 GiB file is left out of the branch and
// reported by the run's summary and by diff; the agent's refs and tag stay in the clone; no
// raw escape reaches the terminal; nothing in the user's repository becomes root's; the masked
// .env is absent from the clone's work tree; the agent finds neither the user's tree nor its
// untracked file.
func TestAttackIsolatedPlants(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	marks, outside := attackDirs(t, h)
	if out, err := exec.Command("git", "init", "--quiet", "--bare", filepath.Join(outside, "repo.git")).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	gitRepo(t, h, map[string]string{"README": "hello\n", ".env": "TOKEN=isolated-attack-secret\n"})
	userMarker := "USER-UNTRACKED-" + filepath.Base(h.Dir)
	workspaceFile(t, h.Workspace, "untracked.txt", userMarker+"\n")
	upProject(t, h, "isoatk", nil, "mounts:\n  mask: [\".env\"]\n")
	head := repoGit(t, h, "rev-parse", "HEAD")
	owned := notOwners(t, h)

	res := h.Abox("run", "--isolated", plantScript(marks, outside, userMarker))
	out := agentOutput(res.Stdout)
	noMarks(t, marks, "the run and its collect")
	if !res.OK() || !strings.Contains(out, "planted") {
		t.Fatalf("the planting run: %s\nagent:\n%s", res, out)
	}

	// Masks: the .env is not in the clone's work tree. Its committed content is in the clone's
	// history, shared with the user's (internal/isolate/doc.go), as it is under a live run's
	// mounted .git: the test holds that so that the documentation stays true.
	if !strings.Contains(out, "env-absent") {
		t.Errorf("the masked .env is in the clone's work tree:\n%s", out)
	}
	if !strings.Contains(out, "env-history TOKEN=isolated-attack-secret") {
		t.Errorf("the masked .env's committed content is no longer in the clone's history: update doc.go and SECURITY.md W13\n%s", out)
	}
	if strings.Contains(out, "found-user-file") {
		t.Errorf("the agent read the user's untracked file:\n%s", out)
	}

	branches := isolatedBranches(t, h)
	if len(branches) != 1 {
		t.Fatalf("isolated runs recorded: %v, want 1", branches)
	}
	var id, branch string
	for id, branch = range branches {
	}
	// The agent's mounts: no path of the user's tree, and of abox's clones only its own, at
	// /workspace.
	clones := 0
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "mount ") {
			continue
		}
		if strings.Contains(l, h.Workspace+" ") || strings.Contains(l, h.Workspace+"/") {
			t.Errorf("the user's tree is mounted in the isolated run: %s", l)
		}
		if strings.Contains(l, "/clones/") {
			clones++
			if !strings.Contains(l, "/clones/"+id+" /workspace ") {
				t.Errorf("a clone other than the run's own, or elsewhere than /workspace: %s", l)
			}
		}
	}
	if clones != 1 {
		t.Errorf("the agent's mountinfo shows %d clones, want its own once:\n%s", clones, out)
	}
	if strings.Contains(res.Stderr, "\x1b") || strings.Contains(res.Stderr, "\a") {
		t.Errorf("the run's summary holds a raw escape:\n%q", res.Stderr)
	}
	if !strings.Contains(res.Stderr, "isolated: left out of the branch: big.bin (1073741824 bytes)") {
		t.Errorf("the run's summary does not report the 1 GiB file left out:\n%s", res.Stderr)
	}
	if !strings.Contains(res.Stderr, "abox merge refuses without --force") {
		t.Errorf("the run's summary does not say merge refuses the links out:\n%s", res.Stderr)
	}

	// The agent's refs stay in the clone: the user's repository has its branch and the run's.
	if refs := repoGit(t, h, "for-each-ref", "--format=%(refname)"); refs != "refs/heads/"+branch+"\nrefs/heads/main" {
		t.Errorf("the user's refs after collect:\n%s\nwant only main and %s", refs, branch)
	}
	if got := repoGit(t, h, "rev-parse", "refs/heads/main"); got != head {
		t.Errorf("the user's main moved to %s", got)
	}
	if got := repoGit(t, h, "cat-file", "-p", branch+":escape"); got != filepath.Join(outside, "secret") {
		t.Errorf("the symlink was committed as %q, not as its target's name", got)
	}
	if got := repoGit(t, h, "show", branch+":x.proc"); got != "through the process filter" {
		t.Errorf("x.proc on the branch = %q", got)
	}
	for _, p := range []string{"big.bin", "pipe"} {
		if hostGitOK(h, "cat-file", "-e", branch+":"+p) {
			t.Errorf("%s is on the branch", p)
		}
	}
	userObjectsLack(t, h, "OUTSIDE-ONLY-SECRET", "after collect")
	notRootOwned(t, h, owned, "after collect")

	diff := h.Abox("diff", id)
	patch := h.Abox("diff", id, "--patch")
	js := h.Abox("diff", id, "--json")
	noMarks(t, marks, "abox diff")
	for _, r := range []harness.Result{diff, patch} {
		if !r.OK() || strings.Contains(r.Stdout, "\x1b") || strings.Contains(r.Stdout, "\a") {
			t.Errorf("abox diff: want success and no raw escape:\n%q", r.Stdout)
		}
	}
	if !strings.Contains(diff.Stdout, "left out of the run's last commit: big.bin (1073741824 bytes)") {
		t.Errorf("abox diff does not report the 1 GiB file:\n%s", diff.Stdout)
	}
	secret := filepath.Join(outside, "secret")
	for _, want := range []string{
		"✖ A escape  (-> " + secret + "; outside the repository: " + secret + ")\n",
		"✖ A escdir  (-> " + outside + "; outside the repository: " + outside + ")\n",
		"✖ A up  (-> ../../../../../../../../etc; outside the repository: " + filepath.Join(h.Workspace, "../../../../../../../../etc") + ")\n",
	} {
		if !strings.Contains(diff.Stdout, want) {
			t.Errorf("abox diff does not flag a link out with where it leads: %q\n%s", want, diff.Stdout)
		}
	}
	var d struct {
		Files []struct {
			Path string `json:"path"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(js.Stdout), &d); err != nil {
		t.Fatalf("abox diff --json: %v\n%s", err, js)
	}
	named := false
	for _, f := range d.Files {
		named = named || f.Path == "name\x1b[2J\x1b]0;pwned\a\nfake line.txt"
	}
	if !named {
		t.Errorf("abox diff --json does not keep the exact name with escapes: %+v", d.Files)
	}
	for _, l := range strings.Split(diff.Stdout+patch.Stdout, "\n") {
		if strings.HasPrefix(l, "fake line") {
			t.Errorf("a newline in a file name forged a line of abox diff: %q", l)
		}
	}

	refused := h.Abox("merge", id)
	if refused.OK() || !strings.Contains(refused.Stderr, "escape") {
		t.Errorf("abox merge of links out: %s; want a refusal naming them", refused)
	}
	noMarks(t, marks, "refused merge")
	if res := h.Abox("merge", id, "--force"); !res.OK() {
		t.Fatalf("abox merge --force: %s", res)
	}
	noMarks(t, marks, "abox merge --force")
	if st, err := os.Lstat(filepath.Join(h.Workspace, "escape")); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("escape in the user's tree: %v, %v; want a symlink", st, err)
	}
	if _, err := os.Lstat(filepath.Join(h.Workspace, "big.bin")); err == nil {
		t.Error("big.bin was merged")
	}
	if readWorkspace(h.Workspace, ".env") != "TOKEN=isolated-attack-secret\n" {
		t.Errorf("the merge changed the user's masked .env: %q", readWorkspace(h.Workspace, ".env"))
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 2 {
		t.Errorf("the directory the links lead to now holds %d entries, want 2", len(ents))
	}
	userObjectsLack(t, h, "OUTSIDE-ONLY-SECRET", "after merge")
	notRootOwned(t, h, owned, "after merge")
	// The user's own git, on the merged tree, with the agent's .gitattributes: the drivers are
	// not in the user's config, so nothing runs there either.
	repoGit(t, h, "status", "--porcelain")
	repoGit(t, h, "diff", "HEAD~1")
	noMarks(t, marks, "the user's git status and diff after the merge")
}

// redirectScript commits the agent's work, then points git at the host: the clone's index
// names a host file through "../", a blob of another repository referenced through
// alternates, .git replaced by a gitfile or a symlink to the user's .git.
func redirectScript(how, userGit, outside, blob string) string {
	work := `echo work > work.txt && git add work.txt && git -c user.name=agent -c user.email=agent@example.invalid commit --quiet -m work && echo more > more.txt`
	var plant string
	switch how {
	case "index":
		// A version-2 index naming README, work.txt and ../…/<outside>/secret, with zero stat
		// data so that git add hashes each again; enough ".." to reach / from any depth.
		plant = `blob=$(git rev-parse HEAD:README)
perl -MDigest::SHA=sha1 -e '
my ($blob, @names) = @ARGV; my $id = pack("H*", $blob); @names = sort @names;
my $d = "DIRC" . pack("NN", 2, scalar @names);
for my $n (@names) { $d .= pack("N10", 0,0,0,0,0,0,0100644,0,0,0) . $id . pack("n", length $n) . $n . ("\0" x (8 - (62 + length $n) % 8)) }
open my $f, ">", ".git/index" or die; binmode $f; print $f $d . sha1($d);' "$blob" README work.txt "` + strings.Repeat("../", 30) + strings.TrimPrefix(filepath.Join(outside, "secret"), "/") + `"
git ls-files | sed "s/^/index /"`
	case "alternates":
		// A commit whose tree names the outside repository's blob, reachable only through
		// the planted alternates.
		plant = `echo ` + shq(filepath.Join(outside, "repo.git", "objects")) + ` > .git/objects/info/alternates
git update-index --add --info-only --cacheinfo 100644,` + blob + `,stolen.txt
t=$(git write-tree --missing-ok) && c=$(git -c user.name=agent -c user.email=agent@example.invalid commit-tree "$t" -p HEAD -m stolen) && git update-ref HEAD "$c"`
	case "gitfile":
		plant = `mv .git .git-real && echo "gitdir: ` + userGit + `" > .git`
	case "symlink":
		plant = `mv .git .git-real && ln -s ` + shq(userGit) + ` .git`
	}
	return work + "\n" + plant + "\necho planted-" + how
}

// TestAttackIsolatedRedirectedGit: four isolated runs at once, each pointing git in its clone
// at the host after committing work of its own — an index naming a host file through "../", a
// tree whose blob only a planted alternates reaches, .git as a gitfile and as a symlink to the
// user's .git. Collect refuses every clone (its branch does not arrive, the run fails saying
// so and the clone is kept): the user's refs, HEAD and tree are as they were, the outside
// file's content is in none of the user's objects, and nothing there became root's.
func TestAttackIsolatedRedirectedGit(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	_, outside := attackDirs(t, h)
	other := filepath.Join(outside, "repo.git")
	if out, err := exec.Command("git", "init", "--quiet", "--bare", other).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	hash := exec.Command("git", "--git-dir="+other, "hash-object", "-w", "--stdin")
	hash.Stdin = strings.NewReader("OUTSIDE-ONLY-SECRET in another repository\n")
	blob, err := hash.Output()
	if err != nil {
		t.Fatal(err)
	}
	gitRepo(t, h, map[string]string{"README": "hello\n"})
	upProject(t, h, "isoredir", nil, "")
	head := repoGit(t, h, "rev-parse", "HEAD")
	owned := notOwners(t, h)
	// The test's own git runs as root: --no-optional-locks keeps it from rewriting the index.
	status := repoGit(t, h, "--no-optional-locks", "status", "--porcelain")
	userGit := filepath.Join(h.Workspace, ".git")

	hows := []string{"index", "alternates", "gitfile", "symlink"}
	results := make([]harness.Result, len(hows))
	var wg sync.WaitGroup
	for i, how := range hows {
		_, done := startAbox(t, h, h.Workspace, nil, "run", "--isolated", redirectScript(how, userGit, outside, strings.TrimSpace(string(blob))))
		wg.Add(1)
		go func() { defer wg.Done(); results[i] = done() }()
	}
	wg.Wait()
	for i, how := range hows {
		r := results[i]
		if !strings.Contains(agentOutput(r.Stdout), "planted-"+how) {
			t.Errorf("%s: the agent did not plant:\n%s", how, r)
			continue
		}
		if r.OK() || !strings.Contains(r.Stderr, "collecting isolated run") || !strings.Contains(r.Stderr, "not collected") {
			t.Errorf("%s: want the run to fail saying its branch was not collected:\n%s", how, r)
		}
		if !strings.Contains(r.Stderr, "the clone is kept") {
			t.Errorf("%s: the run does not say the clone is kept:\n%s", how, r.Stderr)
		}
	}
	if refs := repoGit(t, h, "for-each-ref", "--format=%(refname)"); refs != "refs/heads/main" {
		t.Errorf("the user's refs after the refused collects:\n%s", refs)
	}
	if got := repoGit(t, h, "rev-parse", "HEAD"); got != head {
		t.Errorf("the user's HEAD moved: %s", got)
	}
	userObjectsLack(t, h, "OUTSIDE-ONLY-SECRET", "after the refused collects")
	notRootOwned(t, h, owned, "after the refused collects")
	if st := repoGit(t, h, "--no-optional-locks", "status", "--porcelain"); st != status {
		t.Errorf("the user's tree changed:\n%s\nwant:\n%s", st, status)
	}
	// The clones are kept for the user to look at, and removed by discard. Not even the clone
	// took the host file: abox's git, root here, never read it.
	for id := range isolatedBranches(t, h) {
		clone := filepath.Join(h.StateHome, "projects", h.ProjectHash(), "clones", id)
		gitDir := filepath.Join(clone, ".git")
		if _, err := os.Stat(filepath.Join(clone, ".git-real")); err == nil {
			gitDir = filepath.Join(clone, ".git-real") // the agent moved it there
		}
		cmd := exec.Command("git", "-c", "safe.directory=*", "--git-dir="+gitDir, "cat-file", "--batch-all-objects", "--batch")
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		if all, err := cmd.Output(); err != nil || strings.Contains(string(all), "OUTSIDE-ONLY-SECRET\n") {
			t.Errorf("the kept clone %s: %v, or it holds the outside file's content", id, err)
		}
		if res := h.Abox("discard", id); !res.OK() {
			t.Errorf("abox discard %s: %s", id, res)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "secret")); err != nil {
		t.Errorf("discard removed what a clone linked to: %v", err)
	}
	if got := repoGit(t, h, "rev-parse", "HEAD"); got != head {
		t.Errorf("after discard the user's HEAD is %s", got)
	}
}

// TestAttackIsolatedMaskedLinkTarget: the masked .env is a symlink to config/prod.env, as
// projects with one env file per stage have it. A live run masks the link's target (FM8); an
// isolated run's clone must lack that content as well, in its work tree and its start commit,
// and the branch must give the file back as it was.
func TestAttackIsolatedMaskedLinkTarget(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	gitRepo(t, h, map[string]string{"README": "hello\n", "config/prod.env": "TOKEN=linked-stage-secret\n"})
	if err := os.Symlink("config/prod.env", filepath.Join(h.Workspace, ".env")); err != nil {
		t.Fatal(err)
	}
	os.Lchown(filepath.Join(h.Workspace, ".env"), 1000, 1000)
	repoGit(t, h, "add", ".env")
	repoGit(t, h, "commit", "--quiet", "-m", "the env link")
	exec.Command("chown", "-R", "1000:1000", h.Workspace).Run()
	upProject(t, h, "isomasklink", nil, "mounts:\n  mask: [\".env\"]\n")
	// The work tree only: the committed content is in the history of both (doc.go), and the
	// isolated run's HEAD, its start commit, must lack it too.
	probe := `cat config/prod.env .env 2>/dev/null | sed "s/^/read /"; echo probed`
	for _, mode := range [][]string{{"run"}, {"run", "--isolated"}} {
		script := probe
		if len(mode) == 2 {
			script = `git show HEAD:config/prod.env 2>/dev/null | sed "s/^/head /"; ` + probe
		}
		res := h.Abox(append(mode, script)...)
		out := agentOutput(res.Stdout)
		if !res.OK() || !strings.Contains(out, "probed") {
			t.Fatalf("%v: %s", mode, res)
		}
		if strings.Contains(out, "linked-stage-secret") {
			t.Errorf("%v: the agent read the masked link's target:\n%s", mode, out)
		}
	}
	branches := isolatedBranches(t, h)
	if len(branches) != 1 {
		t.Fatalf("isolated runs: %v", branches)
	}
	for _, b := range branches {
		if got := repoGit(t, h, "show", b+":config/prod.env"); got != "TOKEN=linked-stage-secret" {
			t.Errorf("the branch does not give config/prod.env back as it was: %q", got)
		}
	}
}
