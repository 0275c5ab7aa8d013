// Package isolate gives a run a private git clone of the project instead of the user's live
// checkout, and brings the result back only when the user says so (issue 21).
//
// In a live run /workspace is a bind of the user's tree: whatever the agent writes — a CI
// workflow, a Makefile target, a git hook — lands there at once and runs later, outside every
// control. An isolated run works in a clone abox makes in the project's state directory
// ([paths.Project.Clone]), on a branch abox/<run> from the current HEAD. After the run the host
// pulls the branch into the user's repository; the agent never pushes. The user reviews it
// ([Repo.Diff], execution-adjacent files first), then lands it ([Repo.Merge]) or drops it
// ([Repo.Discard]). Several clones of one project can exist at once. A clone is filled by a push
// from the user's repository, so it shares no object file (no hard link) with it: writing into
// the clone's objects cannot change the user's.
//
// # The clone is hostile after the run
//
// Everything under the clone, .git included, was writable by the agent. Git reads a
// repository's own .git/config for every command run in it, and that config can run programs
// (core.fsmonitor, core.hooksPath, filter drivers, diff textconv); .git can be a symlink or a
// gitfile that points elsewhere; objects/info/alternates can pull in another repository. So
// abox never runs git in the clone with anything of the clone trusted:
//
//   - before each use it checks that .git is a real directory holding no symlink and nothing but
//     directories and regular files, removes the files that point git elsewhere
//     (objects/info/alternates, info/grafts, commondir, config.worktree), and writes .git/config
//     itself;
//   - before the end-of-run commit it refuses an index that names a path with an empty, ".",
//     ".." or ".git" name: git checks paths when it writes an index, not when it reads one, and
//     git add would hash "../../etc/shadow" from the host into the branch;
//   - every command gets an environment built from nothing (no system or global config, no
//     replace refs, no GIT_* variable of the caller) and -c overrides that switch off hooks,
//     fsmonitor, the untracked cache and submodule recursion;
//   - the end-of-run commit is made with plumbing (add, write-tree, commit-tree, update-ref),
//     which runs no hooks and no status of nested repositories;
//   - the user's repository never reads the clone: git in the clone writes a bundle of the
//     branch, and git in the user's repository indexes its pack with index-pack --strict, which
//     checks every object (a tree naming .git or ".." is refused) and that all they name is
//     there — not git fetch from the bundle, which checks nothing whatever fetch.fsckObjects
//     says (git 2.39); no upload-pack or config of the clone is involved;
//   - diff runs with --no-ext-diff and --no-textconv, so no driver named by the branch's
//     .gitattributes runs either.
//
// Symlinks are committed as links, never followed. Where one leads is resolved, not joined:
// abox walks the tree the merge would check out name by name, as the kernel would after the
// merge, following the tree's own links (and, where the tree names nothing, what the user's
// work tree holds): with a/y -> .., notes.txt -> a/y/../.bashrc leads to the .bashrc beside the
// checkout, not to a/.bashrc. [Repo.Diff] says where each link leads and flags one that leads
// out of the repository, into .git, or nowhere it can resolve (a loop, more than 40 links, a
// submodule's content), as well as a link of the user's that the branch makes lead out;
// [Repo.Merge] refuses them unless forced. The same resolution tells what a file is to the
// host's tools: a file of the branch under the place a symlink of the merged tree leads to is
// looked up in the catalog under the link's path too (tools/claude/settings.json is
// .claude/settings.json to Claude Code when .claude -> tools/claude), and marked as such. A
// file larger than [MaxFileBytes] that the agent left uncommitted is left out of the
// end-of-run commit and reported, so the host never spends its CPU hashing what the agent
// chose (git takes about 15 s of this machine for 1 GiB of zeros); one the agent committed
// itself is reported by Diff and refused by Merge unless forced. A FIFO, socket or device is
// left out and reported the same way: git refuses to add one, which would otherwise leave the
// whole run uncollectable.
//
// # Masked paths
//
// Masked paths (the manifest's mounts.mask and config.yaml's defaults.mask) are removed, not
// shadowed: the clone's first commit of its own ("abox: start of run …") drops every tracked
// path a pattern matches from the index and work tree, so they are never checked out — and, as
// a live run masks them, what a masked symlink leads to inside the repository and what a literal
// pattern names through a linked directory, found by walking the links of the clone's tree as the
// kernel would in its checkout ([linkwalk]), not by joining them as text. Shadowing would need a
// mount per path, as a live run does, but a clone's work tree holds only what abox
// wrote into it; leaving masked content out is simpler and leaves nothing to get wrong at
// mount time. Untracked files (the usual .env) never reach a clone at all, since only commits
// are copied. A masked path that is committed is still in the history the clone shares with
// the user's repository — as it is in a live run, where .git is mounted — and uncommitted
// changes carried by [CreateOptions.FromWorktree] are filtered by the masks before they are
// committed, so their masked content never reaches the clone. Merging the branch must not
// delete the user's masked files, so [Repo.Collect] ends it with a commit of its own, made in
// the user's repository in a private index, that puts every removed path back as it was.
//
// # Who runs git
//
// abox may run as root (a server, CI) on a repository a user owns. Then every git command in
// the user's repository runs as that owner ([WorkspaceAccount]), with their home's config, so
// nothing abox writes there — objects, refs, checked-out files — becomes root's, and the
// user's own config never runs with root's privileges. Its temporary files (private indexes,
// bundles) live in a directory of the system's temporary space that only that owner and abox
// can enter; the owner cannot reach abox's state, which is why the clone is filled from a
// bundle too. The clone is given to the agent's uid ([CreateOptions.Owner]) once it is made.
//
// # What a merge replaces
//
// git merge refuses to overwrite an untracked file of the user's, but takes one git ignores for
// expendable: a branch that commits a .env overwrites the user's ignored .env and its secret, in
// a fast-forward and a merge commit alike (git 2.39), and one that puts a file where the user
// has an ignored symlink or a directory of ignored files (node_modules/, .venv/) removes them.
// [Repo.Diff] marks each file of the branch whose checkout replaces such a path ([File.Ignored])
// and [Repo.Merge] refuses them unless forced. The paths are the branch's, read from its tree in
// the user's repository; nothing of the clone takes part. They are found in two steps:
//
//   - abox walks each path in the user's work tree itself, name by name with lstat, up to the
//     first name that is not a real directory: a symlink there is what the merge replaces (git
//     writes a directory in its place) and is not followed: with cfg a link to a directory
//     outside, a stat of cfg/x would look there, and git check-ignore refuses a path below a
//     symlink outright, failing the whole review.
//   - whether git ignores what is there is git's to say, asked in the user's repository as the
//     merge runs there (check-ignore; ls-files --others --ignored for a directory the branch
//     puts a file in place of): only git reads every source of rules — .gitignore at each
//     level, .git/info/exclude, the core.excludesFile of the user's own config — and applies
//     them as the merge does (a directory-only rule does not match a symlink, a tracked path is
//     never ignored). Each path it is asked about lies below real directories only.
//
// git's own guard, merge --no-overwrite-ignore, is not enough: in git 2.39 it holds for a
// fast-forward only, and a merge commit overwrites ignored files whatever it says. Merge passes
// it when not forced all the same.
//
// # Merging
//
// [Repo.Merge] runs no hook at all, the user's own included (core.hooksPath=/dev/null): what it
// checks out was written by the agent, and a post-merge or post-checkout hook would run in a
// tree holding it. Filters the user configured themselves (git-lfs, say) still apply to the
// checkout, as for any merge; a driver the agent defined in the clone's config does not exist
// in the user's repository.
package isolate
