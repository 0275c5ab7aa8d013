package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/aboxhq/abox/internal/artifact"
	"github.com/aboxhq/abox/internal/egress"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/project"
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
		egressEdit(a, "add HOST...", "Allow hosts (in running sandboxes at once, and in later runs)", egressAdd),
		egressEdit(a, "rm HOST...", "Remove hosts from the allowlist (in running sandboxes at once)", egressRemove),
		egressEdit(a, "ignore HOST...", "Record a decision against hosts: still blocked, no longer in the queue", egressIgnore),
		egressEdit(a, "unignore HOST...", "Forget an ignore decision", egressUnignore),
		newEgressCheckCmd(a),
	)
}

// egressEditFunc edits the document of p's manifest for hosts and returns what to report.
type egressEditFunc func(a *App, d *manifest.Doc, p *project.Project, hosts []string) (string, error)

func egressEdit(a *App, use, short string, fn egressEditFunc) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			name := strings.Fields(use)[0]
			hosts, err := manifest.ParseHostArgs("abox egress "+name, args)
			if err != nil {
				return err
			}
			p, err := a.loadProject(dir)
			if err != nil {
				return err
			}
			var msg string
			before := slices.Clone(p.Manifest.Egress)
			m, reload, err := a.mutateReload(c.Context(), p, func(d *manifest.Doc) error {
				msg, err = fn(a, d, p, hosts)
				return err
			})
			if err != nil {
				return err
			}
			fmt.Fprintln(a.Out, msg)
			if !slices.Equal(before, m.Egress) {
				// The allowlist changed: say whether running sandboxes have it, since a
				// sandbox that was not reloaded still reaches what rm just removed.
				fmt.Fprintln(a.Out, termtext.Line(reload.String()))
				if name == "rm" && reload.Skipped != nil {
					// Docker could not say what runs: a sandbox it did not list may still reach
					// what was removed. Not knowing is not success.
					return errorf("check that Docker answers (`docker ps`), then stop this project's running sandboxes or reload each with `docker kill --signal HUP <name>`",
						"%s removed from agentbox.yaml, but running sandboxes could not be listed to reload them: %s",
						strings.Join(hosts, ", "), termtext.Line(reload.Skipped.Error()))
				}
				if name == "rm" && len(reload.Failed) > 0 {
					// The removal is saved, but a sandbox that did not get it still reaches
					// what was removed: the command did not do what it was asked.
					return errorf("stop it (`docker stop` the agent, or Ctrl-C its run) or reload it with `docker kill --signal HUP <name>`",
						"%s still allowed by %d running sandbox(es) that were not reloaded: %s",
						strings.Join(hosts, ", "), len(reload.Failed), termtext.Line(strings.Join(reload.Failed, "; ")))
				}
			}
			return nil
		},
	}
	addDirFlag(cmd, &dir)
	return cmd
}

func egressAdd(a *App, d *manifest.Doc, _ *project.Project, hosts []string) (string, error) {
	for _, h := range d.EgressIgnored(hosts) {
		if !a.TTY || !a.confirm(fmt.Sprintf("%s is ignored; unignore and allow it?", h)) {
			return "", errorf("run `abox egress unignore "+h+"` first", "%s is in egress_ignored", h)
		}
	}
	add, err := d.AllowEgress(hosts)
	return manifest.AllowedMessage(hosts, add), err
}

func egressRemove(a *App, d *manifest.Doc, p *project.Project, hosts []string) (string, error) {
	return d.RemoveEgressHosts(hosts, a.mandatory(p)).Message(), nil
}

// mandatory reports whether the rendered policy of p has a host as an entry abox added itself;
// no host is, when there is no readable policy.
func (a *App) mandatory(p *project.Project) func(string) bool {
	pol, err := a.currentPolicy(p)
	return func(host string) bool { return err == nil && pol.IsMandatory(host) }
}

func egressIgnore(a *App, d *manifest.Doc, p *project.Project, hosts []string) (string, error) {
	ignore, mandatory, err := d.IgnoreEgressHosts(hosts, a.mandatory(p))
	return manifest.IgnoredMessage(ignore, mandatory), err
}

func egressUnignore(_ *App, d *manifest.Doc, _ *project.Project, hosts []string) (string, error) {
	return manifest.UnignoredMessage(hosts, d.UnignoreEgress(hosts)), nil
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
	rep, bad, err := telemetry.ReadReview(filepath.Join(p.State.Dir, "denied.jsonl"), pol, p.Manifest.EgressIgnored)
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

// currentPolicy reads the rendered netd policy: what netd enforces.
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
