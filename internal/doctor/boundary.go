package doctor

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
)

// BoundaryChecks are the checks that must all pass before `abox run` lets an agent run with
// bypassPermissions. They read only abox's own state (the rendered artifacts, artifacts.json,
// the approved manifest), never the daemon, and what they cannot verify fails: a boundary is
// positive evidence or nothing.
func BoundaryChecks() []Check {
	list := []struct {
		name, title string
		run         func(context.Context, *Env) Finding
	}{
		{"artifacts", "artifacts rendered", artifactsRendered},
		{"artifacts-current", "artifacts untampered and current", boundaryArtifactsCurrent},
		{"artifacts-private", "artifacts private and read-only to the agent", boundaryArtifactsPrivate},
		{"manifest-approved", "manifest approved by abox up", manifestApproved},
		{"no-docker-sock", "no docker socket", static(invNoDockerSock)},
		{"no-published-ports", "no published port", static(invNoPublishedPorts)},
		{"not-privileged", "not privileged", static(invNotPrivileged)},
		{"capabilities", "agent capabilities dropped", static(invAgentCaps)},
		{"no-new-privileges", "agent cannot gain privileges", static(invNoNewPrivileges)},
		{"user", "agent user not root", static(invAgentUser)},
		{"network", "agent in netd's network namespace", static(invAgentNetwork)},
		{"netd-ports", "ports below 1024 privileged in netd's namespace", static(invNetdPorts)},
		{"login-check", "login check confined", static(invLoginCheck)},
		{"mounts", "agent mounts", agentMounts},
		{"policy", "network policy is abox's ruleset", boundaryPolicy},
		{"mcp-forwarder", "one token-free mcp endpoint", agentMCPForwarder},
	}
	out := make([]Check, len(list))
	for i, b := range list {
		run := positive(b.run)
		if b.name == "artifacts" {
			run = b.run
		}
		out[i] = Check{ID: "boundary." + b.name, Title: b.title, Run: run}
	}
	return out
}

// Boundary runs [BoundaryChecks].
func Boundary(ctx context.Context, e *Env) []Result {
	return Run(ctx, e, BoundaryChecks(), nil)
}

// static audits an invariant on the rendered argv only.
func static(inv invariant) func(context.Context, *Env) Finding {
	return func(ctx context.Context, e *Env) Finding { return e.audit(ctx, inv, false) }
}

// positive turns a check that could not look (skip) into a failure. With nothing rendered at
// all, boundary.artifacts fails alone and the others skip, rather than repeat it.
func positive(run func(context.Context, *Env) Finding) func(context.Context, *Env) Finding {
	return func(ctx context.Context, e *Env) Finding {
		f := run(ctx, e)
		if _, err := e.index(); err != nil && f.Status != OK {
			return skipf("run `abox up`", "nothing rendered (see boundary.artifacts)")
		}
		if f.Status == Skip {
			f.Status = Fail
			if f.Hint == "" {
				f.Hint = "run `abox up`, then `abox doctor`"
			}
		}
		return f
	}
}

// boundaryArtifactsCurrent: the artifacts match artifacts.json and the current manifest.
func boundaryArtifactsCurrent(ctx context.Context, e *Env) Finding {
	if f := artifactsIntegrity(ctx, e); f.Status != OK {
		return f
	}
	f := artifactsCurrent(ctx, e)
	if f.Status == Warn {
		f.Status = Fail
	}
	return f
}

// boundaryArtifactsPrivate: the artifacts live outside the workspace and nobody but their owner
// can write them; the agent mounts them read-only (checked by boundary.mounts).
func boundaryArtifactsPrivate(_ context.Context, e *Env) Finding {
	dir := e.Project.Artifacts()
	if overlaps(dir, e.Project.Workspace) {
		return failf("set ABOX_STATE_HOME outside the workspace, then run `abox up`",
			"the artifacts directory %s overlaps the workspace the agent writes", dir)
	}
	var writable []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Mode()&fs.ModeSymlink != 0 || info.Mode().Perm()&0o022 != 0 {
			rel, _ := filepath.Rel(dir, p)
			writable = append(writable, fmt.Sprintf("%s (%s)", rel, info.Mode()))
		}
		return nil
	})
	if err != nil {
		return failf("run `abox render` to write them again", "reading %s: %v", dir, err)
	}
	if len(writable) > 0 {
		return failf("run `abox render` to write them again with private modes",
			"writable by group or others, or a symlink: %s", firstN(writable, 5)).with("writable", writable)
	}
	return okf("%s: outside the workspace, writable by its owner only", dir)
}

// boundaryPolicy: the rendered ruleset is the one this abox enforces; the loaded one is
// compared by every run before the agent starts.
func boundaryPolicy(_ context.Context, e *Env) Finding {
	return problems(e.renderedRuleset(), "run `abox render` to write it again", "netpolicy.nft is abox's ruleset")
}
