//go:build e2e

package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aboxhq/abox/e2e/harness"
	"github.com/aboxhq/abox/internal/policy"
)

// Filesystem and tampering: the agent tries to change what defines its sandbox, to reach netd's
// audit trail and the Docker socket, to read masked paths, and to widen its own next run.

// TestAttackReadOnlyPaths: the root filesystem, the artifacts under /opt/abox, Claude Code's
// managed settings and resolv.conf are read-only and cannot be remounted; netd's logs are in
// netd's filesystem, which the agent cannot see, so a query it made before trying to erase them
// is still in the harvest; there is no Docker socket anywhere. The artifacts on the host are
// unchanged.
func TestAttackReadOnlyPaths(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	upProject(t, h, "readonly", nil, "")
	artifacts := filepath.Join(h.StateHome, "projects", h.ProjectHash(), "artifacts")
	before := treeDigest(t, artifacts)
	_, got := attackRun(t, h, shellProbe,
		`claude net dns 127.0.0.1:53 logged-before-tamper.test >/dev/null`,
		`try etc-passwd sh -c 'echo "evil::0:0::/:/bin/sh" >> /etc/passwd'`,
		`try etc-new touch /etc/evil`,
		`try etc-resolv sh -c 'echo nameserver 127.0.0.11 > /etc/resolv.conf'`,
		`try opt-new touch /opt/evil`,
		`try usr-claude sh -c 'echo > /usr/local/bin/claude'`,
		`try abox-mcp sh -c 'echo {} > /opt/abox/mcp.json'`,
		`try abox-new touch /opt/abox/evil`,
		`try abox-chmod chmod 0666 /opt/abox/mcp.json`,
		`try abox-rm rm /opt/abox/settings.json`,
		`try managed-settings sh -c 'echo {} > /etc/claude-code/managed-settings.json'`,
		// The agent's home is in the root filesystem and its own: only --read-only stops this.
		`try home-new touch /home/agent/evil`,
		// The binds of abox's artifacts are read-only mounts, whatever the files' owner and mode
		// (the test's state is root's; a user's is the agent's uid, which could chmod them).
		`for m in /opt/abox /etc/claude-code/managed-settings.json /etc/resolv.conf; do o=$(awk -v m="$m" '$5 == m {print $6}' /proc/self/mountinfo); case "$o" in ro|ro,*) r=false;; *) r=true;; esac; echo "bind-rw-$(basename $m) {\"ok\":$r,\"reply\":\"$o\"}"; done`,
		`try remount-root mount -o remount,rw /`,
		`try remount-abox mount -o remount,rw /opt/abox`,
		`try netd-logdir sh -c 'mkdir -p /var/log/abox && : > /var/log/abox/dns.jsonl'`,
		`find / -path /proc -prune -o \( -name 'dns.jsonl' -o -name 'conn.jsonl' -o -name 'netd.jsonl' \) -print 2>/dev/null | grep -q . && echo 'netd-logs-visible {"ok":true}' || echo 'netd-logs-visible {"ok":false}'`,
		`find / -path /proc -prune -o -type s -print 2>/dev/null | grep -q . && echo 'any-socket-file {"ok":true}' || echo 'any-socket-file {"ok":false}'`,
		`[ -e /var/run/docker.sock ] || [ -e /run/docker.sock ] || [ -n "${DOCKER_HOST:-}" ] && echo 'docker-sock {"ok":true}' || echo 'docker-sock {"ok":false}'`,
	)
	probesRefused(t, got, "etc-passwd", "etc-new", "etc-resolv", "opt-new", "usr-claude", "abox-mcp", "abox-new", "abox-chmod",
		"abox-rm", "managed-settings", "home-new", "bind-rw-abox", "bind-rw-managed-settings.json", "bind-rw-resolv.conf", "remount-root", "remount-abox", "netd-logdir", "netd-logs-visible", "any-socket-file", "docker-sock")
	if after := treeDigest(t, artifacts); after != before {
		t.Errorf("the artifacts on the host changed during the run")
	}
	found := false
	for _, r := range harvested[policy.DNSRecord](t, h, policy.DNSLog) {
		found = found || r.Name == "logged-before-tamper.test."
	}
	if !found {
		t.Error("the harvested dns.jsonl lacks the query the agent made before trying to erase the logs")
	}
}

// treeDigest hashes every file name and content under dir.
func treeDigest(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		h.Write([]byte(p + "\x00"))
		h.Write(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestAttackMaskedPaths: masked files, at the top and nested, and a masked directory read as
// empty, also through symlinks; they cannot be written, removed, renamed, hard-linked or
// unmounted; the host copies are intact; and a mask over a path that does not exist creates
// nothing in the workspace.
func TestAttackMaskedPaths(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	secret := "hunter2-masked"
	files := map[string]string{".env": "TOKEN=" + secret + "\n", ".env.local": "LOCAL=" + secret + "\n",
		"sub/deep/.env.production": "PROD=" + secret + "\n", "secrets/key.pem": secret + "\n",
		"config/credentials.json": `{"k":"` + secret + `"}`, "visible.txt": "visible\n"}
	for rel, data := range files {
		workspaceFile(t, h.Workspace, rel, data)
	}
	for link, target := range map[string]string{"link-env": ".env", "sub/link-key": "../secrets/key.pem"} {
		if err := os.Symlink(target, filepath.Join(h.Workspace, link)); err != nil {
			t.Fatal(err)
		}
	}
	upProject(t, h, "masks", nil, "mounts:\n  mask: [\".env*\", \"secrets/\", \"config/credentials.json\", \"absent.key\"]\n")
	out, got := attackRun(t, h, shellProbe,
		`for f in .env .env.local sub/deep/.env.production secrets/key.pem config/credentials.json link-env sub/link-key; do`,
		`  echo "read $f [$(cat "$f" 2>/dev/null | tr -d '\n')]"`,
		`done`,
		`echo "ls-secrets [$(ls -A secrets)]"`,
		`grep -rqs `+secret+` /workspace /tmp && echo 'grep-secret {"ok":true}' || echo 'grep-secret {"ok":false}'`,
		`try write-env sh -c 'echo LEAK=1 >> .env'`,
		`try write-nested sh -c 'echo LEAK=1 >> sub/deep/.env.production'`,
		`try write-dir touch secrets/new.pem`,
		`try rm-env rm .env`,
		`try mv-env mv .env.local moved-env`,
		`try hardlink ln .env hard-env`,
		`try umount umount .env`,
		`echo "visible [$(cat visible.txt)]"`,
	)
	for _, f := range []string{".env", ".env.local", "sub/deep/.env.production", "secrets/key.pem", "config/credentials.json", "link-env", "sub/link-key"} {
		if !strings.Contains(out, "read "+f+" []\n") {
			t.Errorf("reading masked %s: want it empty:\n%s", f, out)
		}
	}
	if !strings.Contains(out, "ls-secrets []\n") || !strings.Contains(out, "visible [visible]") {
		t.Errorf("want the masked directory empty and the unmasked file readable:\n%s", out)
	}
	probesRefused(t, got, "grep-secret", "write-env", "write-nested", "write-dir", "rm-env", "mv-env", "hardlink", "umount")
	for rel, data := range files {
		if got := readWorkspace(h.Workspace, rel); got != data {
			t.Errorf("host %s = %q after the run, want %q", rel, got, data)
		}
	}
	for _, rel := range []string{"absent.key", "moved-env", "hard-env", "secrets/new.pem"} {
		if _, err := os.Lstat(filepath.Join(h.Workspace, rel)); err == nil {
			t.Errorf("%s exists in the host workspace after the run", rel)
		}
	}
}

// TestAttackManifestWidening: agentbox.yaml is in the workspace, so the agent can add a host to
// it. The next run refuses (exit 3) and shows the change, starts nothing and reaches nothing,
// until a person approves it with `abox up`; then, as the control, the host is reachable.
func TestAttackManifestWidening(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	other := h.StartServer("other.test")
	upProject(t, h, "widen", []string{"allowed.test"}, "")
	// The manifest belongs to the user, whose uid the agent's usually is.
	if err := os.Chown(filepath.Join(h.Workspace, "agentbox.yaml"), 1000, 1000); err != nil {
		t.Fatal(err)
	}
	attackRun(t, h, `printf '  - "other.test"\n' >> agentbox.yaml; tail -1 agentbox.yaml`)
	if !strings.Contains(readWorkspace(h.Workspace, "agentbox.yaml"), `- "other.test"`) {
		t.Fatal("the agent could not edit agentbox.yaml: the attack did not happen")
	}
	probe := `echo "other $(claude net tls other.test:443 other.test)"`
	res := h.Abox("run", probe)
	if res.ExitCode != 3 || !strings.Contains(res.Stderr, `- "other.test"`) || !strings.Contains(res.Stderr, "\n+ ") || !strings.Contains(res.Stderr, "`abox up` approves it") {
		t.Errorf("run with the widened manifest: %s; want exit 3 with the diff and the hint", res)
	}
	if runs := runRecords(t, h); len(runs) != 1 {
		t.Errorf("%d runs recorded, want only the agent's own: the refused run started a sandbox", len(runs))
	}
	if ev := h.Traffic(other.Container); len(ev) != 0 {
		t.Errorf("other.test was reached before approval: %v", ev)
	}
	mustAbox(t, h, "up", "--yes")
	_, got := attackRun(t, h, probe)
	probesOK(t, got, "other")
}
