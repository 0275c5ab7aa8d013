package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/aboxhq/abox/internal/artifact"
	"github.com/aboxhq/abox/internal/edit"
	"github.com/aboxhq/abox/internal/egress"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/remedy"
	"github.com/aboxhq/abox/internal/telemetry"
	"github.com/aboxhq/abox/internal/termtext"
)

func newEgressCmd(a *App) *cobra.Command {
	var dir string
	var jsonOut bool
	list := &cobra.Command{
		Use:   "list",
		Short: "Show allowed hosts, ignored hosts and the review queue",
		Long: `List shows the allowlist (entries abox adds itself marked mandatory), the hosts you
ignored, and the review queue: names the agent looked up (DNS) or connected to (TLS SNI or HTTP
Host, a stronger signal) and was denied, with counts and runs, newest first.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runEgressList(a, dir, jsonOut) },
	}
	addDirFlag(list, &dir)
	list.Flags().BoolVar(&jsonOut, "json", false, "print JSON")
	return groupCmd("egress", "Manage the egress allowlist and review what the agent tried to reach",
		list,
		egressEdit(a, "add HOST...", "Allow hosts (in running sandboxes at once, and in later runs)", edit.AllowEgress),
		egressEdit(a, "rm HOST...", "Remove hosts from the allowlist (in running sandboxes at once)", edit.RemoveEgress),
		egressEdit(a, "ignore HOST...", "Record a decision against hosts: still blocked, no longer in the queue", edit.IgnoreEgress),
		egressEdit(a, "unignore HOST...", "Forget an ignore decision", edit.UnignoreEgress),
		newEgressCheckCmd(a),
	)
}

// egressEditFunc is the edit of one egress command ([edit.AllowEgress] and the others).
type egressEditFunc func(context.Context, *project.Project, edit.Env, []string) (*edit.EgressResult, error)

func egressEdit(a *App, use, short string, fn egressEditFunc) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			hosts, err := manifest.ParseHostArgs("abox egress "+strings.Fields(use)[0], args)
			if err != nil {
				return err
			}
			p, err := a.loadProject(dir)
			if err != nil {
				return err
			}
			res, err := fn(c.Context(), p, a.editEnv(), hosts)
			if res != nil {
				fmt.Fprintln(a.Out, res.Message)
				if res.Changed {
					// Say whether running sandboxes have the new allowlist: one that was not
					// reloaded still reaches what rm just removed.
					fmt.Fprintln(a.Out, termtext.Line(res.Reloaded.String()))
				}
			}
			return remedy.Egress(remedy.Edit(err))
		},
	}
	addDirFlag(cmd, &dir)
	return cmd
}

func runEgressList(a *App, dir string, jsonOut bool) error {
	p, err := a.loadProject(dir)
	if err != nil {
		return err
	}
	pol, err := a.currentPolicy(p)
	if err != nil {
		return err
	}
	rep, bad, err := telemetry.ReadReview(p.State.Denied(), pol, p.Manifest.EgressIgnored)
	if err != nil {
		return err
	}
	for _, b := range bad {
		a.warnf("", "corrupt line skipped: %s", b)
	}
	if jsonOut {
		return a.writeJSON(rep)
	}
	rep.WriteText(a.Out)
	return nil
}

// currentPolicy reads the rendered netd policy, what netd enforces, naming the fix of one that
// cannot be read.
func (a *App) currentPolicy(p *project.Project) (*policy.Netd, error) {
	pol, err := artifact.ReadNetdPolicy(p.State.Artifacts())
	switch {
	case errors.Is(err, artifact.ErrNoNetdPolicy):
		return nil, errorf("run `abox render`", "the project has no rendered policy: %v", err)
	case err != nil:
		return nil, withHint(err, "run `abox render` to write it again")
	}
	return pol, nil
}

func newEgressCheckCmd(a *App) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "check HOST[:PORT]",
		Short: "Say whether the current policy allows a host (exit 0 allowed, 1 denied)",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return runEgressCheck(c.Context(), a, dir, args[0])
		},
	}
	addDirFlag(cmd, &dir)
	return cmd
}

func runEgressCheck(_ context.Context, a *App, dir, arg string) error {
	e, err := egress.Parse(arg)
	if err != nil || e.Wildcard {
		return errorf("write a host name, optionally with :port", "%q is not a host to check", arg)
	}
	p, err := a.loadProject(dir)
	if err != nil {
		return err
	}
	pol, err := a.currentPolicy(p)
	if err != nil {
		return err
	}
	v, err := pol.Verdict(e.Host, e.Port)
	if err != nil {
		return err
	}
	fmt.Fprintln(a.Out, v)
	if v.Allowed {
		return nil
	}
	return silentExit(ExitError)
}
