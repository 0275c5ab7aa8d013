package cli

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/aboxhq/abox/internal/doctor"
	"github.com/aboxhq/abox/internal/hostprobe"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/sandbox"
)

type doctorOptions struct {
	dir         string
	jsonOut     bool
	all         bool
	probe       bool
	acceptGit   bool
	acceptWatch bool
	quick       bool
	skip        []string
}

func newDoctorCmd(a *App) *cobra.Command {
	var opts doctorOptions
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Audit the live machine against the project's artifacts",
		Long: `Doctor audits what exists on this machine — the rendered artifacts and their hashes, the
docker argv of the sandbox, the images, the network, the gateway, any running sandbox and the
ruleset its netd has loaded, the review queue, git's config and hooks, and the files that run
code outside the sandbox — against what abox rendered and what abox up approved. It never takes
the manifest's word for anything.

Each check is one line: ✔ ok, ! warn, ✖ fail, - skipped, with a hint naming the command that
fixes a warn or fail. Passing checks are listed with -v. The residual risks — what abox knows it
does not prevent — are stated on every run. The boundary.* checks are the ones abox run requires
before it allows bypassPermissions.

git.tamper and workspace.exec-surface compare .git's dangerous keys and hooks and the watched
files with the baseline abox up recorded, and report every change until --accept-git or
--accept-watch records the workspace as it is now. Doctor never records a baseline on its own:
without one they warn, and abox run refuses to start an agent.

--probe starts a throwaway sandbox whose agent, as the project's agent user, tries each escape route (an
unlisted name, Docker's resolver, an IP literal, IPv6, the host's bridge address, the gateway
directly, changing the ruleset, a setuid binary); it targets only the project's own containers,
loopback and names under .invalid.

Doctor exits 2 when a check fails, 0 otherwise.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runDoctor(c.Context(), a, opts) },
	}
	addDirFlag(cmd, &opts.dir)
	f := cmd.Flags()
	f.BoolVar(&opts.jsonOut, "json", false, "print the report as JSON")
	f.BoolVarP(&opts.all, "all", "v", false, "list passing checks too")
	f.BoolVar(&opts.probe, "probe", false, "also run live escape probes in a throwaway sandbox")
	f.BoolVar(&opts.acceptGit, "accept-git", false, "accept the current git config and hooks as the new baseline (reports the change once)")
	f.BoolVar(&opts.acceptWatch, "accept-watch", false, "accept the watched files as the new baseline (reports the change once)")
	f.BoolVar(&opts.quick, "quick", false, "do not read secret sources (op, files, env): secrets.fresh is skipped")
	f.StringSliceVar(&opts.skip, "skip", nil, "skip the check with this id (repeatable)")
	return cmd
}

func runDoctor(ctx context.Context, a *App, opts doctorOptions) error {
	env, err := a.doctorEnv(opts.dir)
	if err != nil {
		return err
	}
	env.AcceptGit, env.AcceptWatch = opts.acceptGit, opts.acceptWatch
	env.Quick, env.SecretSources = opts.quick, a.secretSources(false)
	rep, err := doctor.Audit(ctx, env, opts.probe, opts.skip)
	if err != nil {
		return withHint(err, "`abox doctor --json` lists the check ids")
	}
	if opts.jsonOut {
		if err := a.writeJSON(rep); err != nil {
			return err
		}
	} else {
		rep.WriteText(a.Out, doctor.TextOptions{All: opts.all, Color: a.Color})
	}
	if rep.Failed() {
		return silentExit(ExitDoctor)
	}
	return nil
}

// doctorEnv gathers what doctor looks at in the workspace at or above dir ([doctor.Load]).
func (a *App) doctorEnv(dir string) (*doctor.Env, error) {
	ws, err := manifest.Find(dir)
	if errors.Is(err, manifest.ErrNotFound) {
		return nil, withHint(err, "run `abox init` in the project directory first")
	}
	if err != nil {
		return nil, err
	}
	h, err := a.doctorHost()
	if err != nil {
		return nil, err
	}
	return doctor.Load(ws, h), nil
}

// doctorHost is what doctor takes of this machine.
func (a *App) doctorHost() (doctor.Host, error) {
	ps, err := a.Paths()
	if err != nil {
		return doctor.Host{}, err
	}
	return doctor.Host{
		Docker: a.docker(), LookPath: hostprobe.LookPath, Paths: ps, Home: a.getenv("HOME"), MCPHome: a.mcpHome(),
		Now: a.Now, Progress: a.Err, BinarySHA256: a.binarySHA256(), Spec: a.spec, Warden: sandbox.ProcessWarden(a.Executable),
	}, nil
}

// checkBoundary refuses bypassPermissions unless every boundary check passes
// ([doctor.CheckBoundary]): a boundary refusal (exit 3).
func (a *App) checkBoundary(ctx context.Context, p *project.Project) error {
	err := doctor.CheckBoundary(ctx, p, doctor.Host{Home: a.getenv("HOME"), Now: a.Now, Spec: a.spec})
	if err == nil {
		return nil
	}
	return boundary(withHint(err, "fix what `abox doctor` reports, or set run.permission_mode to another mode and run `abox up`"))
}
