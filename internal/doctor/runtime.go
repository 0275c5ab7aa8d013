package doctor

import (
	"context"
	"errors"

	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/sandbox"
)

// agentRuntime reports the runtime the agent runs under, as its argv says, and whether the
// daemon's registration of it is one a run accepts ([sandbox.CheckRuntime]): for runsc, gVisor
// with --network=host. The live half of a run's check, the canary in netd's namespace, runs
// with `abox doctor --probe`, whose sandbox is a run's.
func agentRuntime(ctx context.Context, e *Env) Finding {
	rs, err := e.runSpec()
	if err != nil {
		return notRendered(err)
	}
	rt, ok := rs.Runtime()
	if !ok {
		return failf(invariantHint, "the agent's argv names more than one --runtime")
	}
	if rt == manifest.RuntimeRunc {
		return okf("runc: the agent's system calls reach this machine's kernel (run.runtime: runsc puts gVisor's in between)").
			with("runtime", rt).with("verified", true)
	}
	if f, ok := e.needDaemon(ctx); !ok {
		return f.with("runtime", rt).with("verified", false)
	}
	regs, err := e.Docker.Runtimes(ctx)
	if err != nil {
		return failf("run `docker info` to see why the daemon's runtimes cannot be listed", "listing the daemon's runtimes: %v", err).
			with("runtime", rt).with("verified", false)
	}
	if err := sandbox.CheckRuntime(rt, regs); err != nil {
		var re *sandbox.RuntimeError
		if errors.As(err, &re) {
			return failf(re.Hint, "%s %s; abox refuses to run the agent under it", rt, re.Problem).with("runtime", rt).with("verified", false)
		}
		return failf(invariantHint, "%v", err).with("runtime", rt).with("verified", false)
	}
	return okf("%s: gVisor, registered with --network=host; every run checks it again with a canary in netd's namespace (`abox doctor --probe` runs one)", rt).
		with("runtime", rt).with("verified", true).with("path", regs[rt].Path).with("runtime_args", regs[rt].Args)
}
