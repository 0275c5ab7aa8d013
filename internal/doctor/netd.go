package doctor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/sandbox"
)

// BinaryLabel records, on the netd image, the sha256 of the abox binary baked into it.
const BinaryLabel = "abox.binary-sha256"

// netdImage: the netd image exists and holds this very abox binary, so the enforcement inside
// the sandbox is the code being audited.
func netdImage(ctx context.Context, e *Env) Finding {
	rs, err := e.runSpec()
	if err != nil {
		return notRendered(err)
	}
	if f, ok := e.needDaemon(ctx); !ok {
		return f
	}
	img, err := e.image(ctx, rs.Netd.Image)
	switch {
	case errors.Is(err, docker.ErrNotFound):
		return failf("run `abox up` to build it", "%s is not built", rs.Netd.Image)
	case err != nil:
		return failf("check `docker image inspect "+rs.Netd.Image+"`, then run `abox doctor` again", "%s: %v", rs.Netd.Image, err)
	}
	label := img.Labels[BinaryLabel]
	switch {
	case e.BinarySHA256 == "":
		return warnf("run abox from a readable binary, then `abox doctor` again", "cannot hash the running abox binary to compare")
	case label != e.BinarySHA256:
		return failf("run `abox up` to rebuild it from this binary", "%s holds another abox binary (%s), not this one (%s)",
			rs.Netd.Image, short(label), short(e.BinarySHA256)).with("image_binary", label).with("binary", e.BinarySHA256)
	}
	return okf("%s holds this abox binary (%s)", rs.Netd.Image, short(label))
}

// netdPolicyCheck: the rendered netpolicy.nft is the ruleset this abox enforces, and every
// running netd of the project has exactly it loaded, read back with nft and compared with the
// listing the ruleset produces.
func netdPolicyCheck(ctx context.Context, e *Env) Finding {
	if _, err := e.runSpec(); err != nil {
		return notRendered(err)
	}
	bad, running := e.renderedRuleset(), 0
	if e.daemonUp(ctx) {
		cs, err := e.sandbox(ctx)
		if err != nil {
			bad = append(bad, fmt.Sprintf("could not list running sandboxes: %v", err))
		}
		for _, c := range cs {
			if role(c) != roleNetd {
				continue
			}
			running++
			if err := e.liveRuleset(ctx, containerName(c)); err != nil {
				bad = append(bad, fmt.Sprintf("running netd %s: %v", containerName(c), err))
			}
		}
	}
	return problems(bad, "remove the sandbox with `abox nuke` and run `abox render`; a ruleset that differs means netd was tampered with",
		fmt.Sprintf("netpolicy.nft is abox's ruleset; %d running netd(s) have it loaded", running)).with("running", running)
}

// renderedRuleset compares netpolicy.nft with the ruleset of this abox for the runspec's agent,
// and checks that netd.json runs netd as the uid that ruleset names.
func (e *Env) renderedRuleset() []string {
	data, err := e.artifactFile(render.NetdDir + "/" + policy.RulesFile)
	if err != nil {
		return []string{fmt.Sprintf("netpolicy.nft: %v", err)}
	}
	uid, err := e.netdUID()
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	if !bytes.Equal(data, policy.Ruleset(uid)) {
		out = append(out, "the rendered netpolicy.nft is not the ruleset this abox enforces")
	}
	if p, err := e.netdPolicy(); err == nil && p.ServingUID() != uid {
		out = append(out, fmt.Sprintf("netd.json runs netd as uid %d, but beside an agent of uid %d netd must be %d", p.ServingUID(), uid, uid))
	}
	return out
}

// netdUID is the uid netd must run as beside the runspec's agent, whose uid netd's may never be.
func (e *Env) netdUID() (int, error) {
	s, err := e.sandboxArgs()
	if err != nil {
		return 0, err
	}
	uid, _, _ := strings.Cut(s.agent.user, ":")
	n, err := strconv.Atoi(uid)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("the runspec's agent user %q is not a numeric non-root uid", s.agent.user)
	}
	return policy.NetdUIDFor(n), nil
}

// liveRuleset reads the ruleset a running netd has loaded and compares it with the expected one.
func (e *Env) liveRuleset(ctx context.Context, netd string) error {
	res, err := e.Docker.Exec(ctx, netd, "0", []string{"/usr/sbin/nft", "-j", "list", "ruleset"}, nil)
	if err != nil {
		return fmt.Errorf("reading its ruleset: %w", err)
	}
	uid, err := e.netdUID()
	if err != nil {
		return err
	}
	if err := policy.CompareRuleset(policy.ExpectedRuleset(uid), res.Stdout); err != nil {
		return fmt.Errorf("the loaded ruleset differs: %s", firstLine(err.Error(), 400))
	}
	return nil
}

// firstLine shortens a multi-line message to its first line, at most max bytes, saying how
// many lines were left out.
func firstLine(s string, max int) string {
	lines := strings.Split(s, "\n")
	out := lines[0]
	if len(out) > max {
		out = out[:max] + "…"
	}
	if len(lines) > 1 {
		out += fmt.Sprintf(" (and %d more)", len(lines)-1)
	}
	return out
}

// netdCapabilities: netd drops everything but what it needs to load the ruleset and drop to
// its own uid, with no-new-privileges.
func netdCapabilities(ctx context.Context, e *Env) Finding {
	return e.audit(ctx, invNetdCaps, true)
}

// netdPrivilegedPorts: the agent shares netd's namespace, which must not let it bind the ports
// netd asks on.
func netdPrivilegedPorts(ctx context.Context, e *Env) Finding {
	return e.audit(ctx, invNetdPorts, true)
}

func short(sum string) string {
	if len(sum) > 12 {
		return sum[:12]
	}
	if sum == "" {
		return "none"
	}
	return sum
}

// retiredStale is how long a finished netd may stay on the retire list untouched before doctor
// says its removal did not happen: the after-run process removes it within a second of the run.
const retiredStale = 2 * time.Minute

// netdRetired: no finished netd lingers. A run leaves its netd, finished, to the after-run
// process to remove; one that is still there minutes later idles with the run's logs in it and
// a place on the project network, and is removed only by the next run's after-run process.
func netdRetired(ctx context.Context, e *Env) Finding {
	names, changed, err := sandbox.Retired(e.Project)
	if err != nil {
		return failf("check the permissions of abox's state directory", "reading the retire list: %v", err)
	}
	if f, ok := e.needDaemon(ctx); !ok {
		return f
	}
	cs, err := e.sandbox(ctx)
	if err != nil {
		return failf("check `docker ps`, then run `abox doctor` again", "listing the project's containers: %v", err)
	}
	var left []string
	for _, c := range cs {
		if role(c) == roleNetd && slices.Contains(names, containerName(c)) {
			left = append(left, containerName(c))
		}
	}
	switch {
	case len(left) == 0:
		return okf("no finished netd left running")
	case e.clock().Sub(changed) < retiredStale:
		return okf("%d finished netd(s) being removed after their run: %s", len(left), firstN(left, 4)).with("retired", left)
	}
	return warnf("the next `abox run` removes them when it ends; `docker rm -f` removes one now",
		"%d finished netd(s) still running %s after their run, their removal not done: %s",
		len(left), e.clock().Sub(changed).Round(time.Second), firstN(left, 4)).with("retired", left)
}

// sandboxOrphans: every running sandbox of the project has its abox or its warden. A run whose
// abox and warden were both killed (`pkill -9 abox`) leaves its agent running with the
// workspace mounted, unrecorded, beside whatever runs next; the next `abox run` of the project
// finishes it, and this check names it meanwhile.
func sandboxOrphans(ctx context.Context, e *Env) Finding {
	if f, ok := e.needDaemon(ctx); !ok {
		return f
	}
	cs, err := e.sandbox(ctx)
	if err != nil {
		return failf("check `docker ps`, then run `abox doctor` again", "listing the project's containers: %v", err)
	}
	orphans := sandbox.Orphans(e.Project, cs)
	if len(orphans) == 0 {
		return okf("every running sandbox of the project has its abox")
	}
	var names []string
	for _, o := range orphans {
		names = append(names, fmt.Sprintf("run %s (%s)", o.Run, strings.Join(o.Containers, ", ")))
	}
	return failf("the next `abox run` or `abox shell` of the project finishes and records them; `abox nuke` removes them",
		"%d run(s) still running with their abox and its warden gone: %s", len(orphans), firstN(names, 4)).with("orphans", orphans)
}
