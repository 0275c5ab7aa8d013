// Package watch fingerprints the parts of a workspace that make code run outside the sandbox,
// later, so that `abox doctor` can say what changed since the last look.
//
// The agent writes /workspace, a live bind of the user's checkout. Most of what it writes is the
// point of the exercise, but some files execute elsewhere: a CI workflow on a runner, a Makefile
// target on the next make, a package.json script on the next install, an editor task, a Claude
// Code hook in .claude/ that the host's own Claude Code runs. And .git/config can make the
// user's next `git status` run a program (core.fsmonitor), or send their credentials somewhere
// else (credential.helper, url.*.insteadOf). None of that runs in the container, so none of
// abox's controls apply; masking every such path would break ordinary work. abox watches them
// instead and reports a change as its own finding.
//
// Two fingerprints are kept, together a [Snapshot] taken by [Take]:
//
//   - [GitState] reads .git/config (and the files it includes) without running git, which would
//     itself execute what it is asked to check, and keeps only the keys that run code or
//     redirect where git reads, writes or sends ([Dangerous]), plus the fingerprint of every
//     hook — for the workspace's repository and every other one inside the workspace;
//   - the watched files: those the [Catalog] names, wherever it applies, and those the user's
//     watch patterns match ([Files]), a regular file by content, a symlink by its target, a
//     FIFO, socket or device by its type; with them, the hidden directories the catalog does
//     not know ([Snapshot.Hidden]).
//
// Both are flat maps from a name to a fingerprint. `abox up` records them as the project's
// [Baseline] before any agent can have run, so nothing an agent plants is ever accepted without
// the user saying so; every run compares a snapshot taken before its agent starts with one taken
// after its containers are gone ([Compare]), and doctor compares the workspace with the
// baseline until the user accepts the change. A baseline's git section records what reading
// of git took it ([GitReading]), and its watch section what the catalog watched
// ([WatchReading]); one taken by an abox that read or watched less is still compared, what it
// did not see shows as added, and doctor says so rather than accept it (see [Baseline]).
//
// # What runs on the host: the catalog
//
// One table, [Catalog], says what in a workspace runs later on the host, or steers what runs:
// each [CatalogEntry] has a pattern, the tool that reads it, when, and why that runs code. It
// covers CI, git's own files and the hook managers, make, just, Task, CMake, Meson and Bazel,
// the package managers and build tools of every toolchain abox knows (npm, yarn, pnpm, gulp,
// Grunt, Nx and the node tools that load their configuration as a module or name modules in
// it — the rc files cosmiconfig reads, in every format; pip and its requirements files, uv,
// pytest, tox, nox and pdb; cargo and rustup; go; Maven and Gradle and their wrappers; Bundler,
// Rake, RSpec, irb and Pry; Composer; MSBuild and NuGet), the infrastructure tools run on the
// host (Docker Compose, Vagrant, Terraform, Tilt, Skaffold), the editors' and agents'
// configuration (VS Code, Dev Containers, JetBrains, Zed, Vim; Claude Code, Codex, Cursor,
// Gemini CLI, Copilot, aider, Windsurf, Cline, Roo Code, Continue, and the instruction files
// they read), the shells' (direnv, mise, asdf, Nix, Devbox, the .env files tools load into the
// environment of what they run, and .config/), virtualenvs and abox's own manifest. Each tool's
// names were taken from its documentation; a name is matched as its bytes, as Linux opens it,
// but for a tool that compares names without regard to case (just), whose entries match every
// case. The live watch ([Take]), the run's summary, doctor and the isolated review ([Lookup])
// all read it; the user's patterns (defaults.watch, mounts.watch) come on top.
//
// Tools read these files where they run, not only at the top of the repository: npm in a
// workspace package, make -C, an editor or an agent opened on a subdirectory; and many look for
// them upward, from where they run to the root (cargo's .cargo/config.toml, MSBuild's
// Directory.Build.props, Maven's .mvn/, go.work, Gemfile, justfile, compose.yaml). So an entry
// has a [Reach]: the root only; the root, the top of every workspace package (a directory
// holding one of [Markers]) and every directory between the two; every virtualenv (a directory
// holding pyvenv.cfg, whatever its name); or every directory (conftest.py, .gitattributes,
// CLAUDE.md, AGENTS.md, meson.build, *.tf). A search of the whole workspace finds them, to
// [MaxDepth] levels, following no link and entering neither .git nor node_modules, within
// [MaxSearch] entries, [MaxPackages] packages and virtualenvs and [MaxNamed] files found by
// name; a bound it hits is a [Capped] of its own ([SearchName]). A watched symlink that leads
// to a directory in the workspace is walked there, its files keyed under the link's path
// (.claude/settings.json through .claude -> tools/claude), within the pattern's budget; one
// that leads to a directory holding it (the top, a parent: a loop) is recorded by its target
// alone. A virtualenv's .pth files are read, and the modules their import lines name (site.py
// executes those lines at every start of its python) are watched beside them, with the
// bytecode python would load in their place ([MaxPthModules] a file).
//
// No catalog is complete. At the root, at the top of every package and in every directory
// between, what the catalog does not know is listed by name ([Snapshot.Hidden]): a directory
// whose name starts with a dot and that the catalog names nothing in, each entry of a hidden
// directory the catalog knows for something else that no entry names (.github/ISSUE_TEMPLATE/
// beside .github/workflows/), and each hidden file no entry names, but those that only tell a tool
// what to skip or how to lay text out (.gitignore and the other .*ignore files, .gitkeep,
// .keep, .editorconfig). One that appears between two snapshots is reported as a new hidden
// directory or file. The noise is bounded by what the list holds: names, one level deep, at the
// places the catalog applies; what appears inside a directory already listed is not reported,
// and one that goes away is not: what is gone runs nothing. Installed dependencies
// (node_modules, a virtualenv's packages beyond what its python runs at every start) are code
// the host runs that the catalog does not fingerprint: too many files, and the user's to
// install.
//
// # What git reads, and what runs
//
// A repository is a layout, not a name. git takes a directory for a git directory when it has
// a valid HEAD and objects and refs (or a commondir file), as is_git_directory() in git's
// setup.c decides, whatever it is called; a .git directory, or a .git file ("gitdir: …"),
// leads to one. The walk for repositories inside the workspace recognises both ways, follows
// no link and is bounded ([MaxNestedWalk], [MaxNestedRepos], [MaxDepth]), naming the bound it
// hits. The walk enters no node_modules; the gitlinks of the workspace's index, which `git
// status` looks into, are read first wherever they are ([MaxGitlinks]). For each git
// directory, the state holds what git reads for it: its config and config.worktree and the
// files they include, its hooks and those of core.hooksPath, its commondir, the git
// directories of its submodules (modules/) and of its linked worktrees
// (worktrees/<name>/config.worktree, which git reads under extensions.worktreeConfig, and a
// commondir of their own), the legacy remote files (remotes/, branches/), and what rewrites the
// history git reads: replace refs, loose and packed (refs/replace/<object> makes `git
// checkout -- Makefile` write another blob while `git status` stays clean), info/grafts and
// objects/info/alternates.
//
// The work tree is not all git reads. For the workspace's own repository the state also holds
// the index's entries marked skip-worktree or assume-unchanged ([MaxFlagged] by name, the rest
// as a count), which `git status` no longer compares with the work tree: a workflow committed,
// so marked and removed from the work tree is in HEAD and in no watched file. The index is
// parsed as git lays it out (versions 2 to 4, SHA-1 or SHA-256 object names), up to
// [MaxIndexBytes]. The snapshot records HEAD and the branches' tips too ([Snapshot.Tips]): a
// run reports a branch it moved — the commits the user's next push sends —, doctor does not,
// since the user commits as well. A bound the reading of git hits (the walk for repositories,
// a hooks directory, an index or packed-refs too large, the walks of git's paths) is named in
// the state, and said again at every look ([Snapshot.GitCapped]): the run's summary prints
// it, run.on_exec_change: fail fails on it, and doctor's git.tamper warns while it is hit.
//
// The keys kept ([Dangerous]) were taken from git's own documentation, the Variables section
// of git-config(1) (git 2.39): every variable whose description says it runs a command, a
// program, a shell, an editor, a pager, a helper or a hook; every one that names a file or a
// directory git reads or writes for the repository, or the work tree (core.worktree); every
// one that includes configuration or turns reading of more on (extensions.worktreeConfig); and
// every one that sends traffic or credentials elsewhere (url.*.insteadOf, credential.*,
// http.proxy, protocol.*.allow). A remote or push URL, and a submodule URL, is kept when git
// would run something on this machine for it: a local path or file:// (receive-pack runs that
// repository's hooks) or a helper transport; a branch's remote and push remote and
// remote.pushDefault when git would take their value for such a URL. Keys documented elsewhere
// than git-config(1) are kept on the same grounds: tar.<format>.command (git-archive(1)),
// svn.authorsProg (git-svn(1)), and git-lfs-config(5)'s, read by the git-lfs filter most users
// configure globally (lfs.url, lfs.pushurl, remote.<name>.lfsurl and lfspushurl,
// lfs.standalonetransferagent, every lfs.customtransfer.<name>.* and lfs.extension.<name>.*,
// lfs.storage); so are git-config(1)'s status.showUntrackedFiles, which hides the agent's files
// from git status, and http.sslVerify, sslCAInfo, sslCAPath, sslCert and sslKey, which let a
// machine in the middle read what git sends or make git send a file. Left out on purpose:
// variables git reads only from protected configuration (system, global, command line), never
// from a repository's (safe.directory, safe.bareRepository, trace2.*; uploadpack.
// packObjectsHook is kept all the same); files read only to change how output looks or
// which objects count (blame.ignoreRevsFile, diff.orderFile, mailmap.file, fsck.skipList);
// network URLs, whose reach is elsewhere; and help.autoCorrect, which runs only git's own
// commands and the aliases kept here. Files in the work tree that git reads are the catalog's
// business, not the git state's (.gitattributes in every directory, .gitmodules, .lfsconfig,
// .git/info/attributes and .git/info/exclude).
//
// # A hostile workspace
//
// The agent chose every byte and every file type under the workspace, and the snapshot is taken
// on the host, as the user. So a snapshot opens nothing but regular files, with O_NONBLOCK and
// O_NOFOLLOW (internal/wsfile), follows a symlink only while it stays in the workspace (where it
// leads is walked link by link as the kernel walks it, up to Linux's 40: internal/linkwalk),
// hashes a file only up to [MaxHashBytes] (a larger one, or one past the snapshot's
// [MaxHashTotal], is fingerprinted by size, inode and ctime, which the agent cannot forge), and
// bounds the entries one pattern visits, the names read from one directory and the depth
// ([MaxPerPattern], [MaxDirEntries], [MaxDepth]), and the search for packages as above. A
// pattern (or the search) that hits a bound is [Capped], and a cap that was not there before is
// itself a change: a bound may make a snapshot report too much, never hide what it did not look
// at.
//
// The paths git builds from the repository's own files (a relative include, core.hooksPath, a
// .git file's gitdir:, a commondir) are not joined as text: in a/link/../x the ".." climbs from
// where a/link leads, as the kernel and git's realpath climb. They are walked the same way, link
// by link up to 40, and a link that leads such a path out of the workspace is named, not
// followed (gitpath.go).
package watch
