package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
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
	if err != nil {
		return "", err
	}
	if len(add) == 0 {
		return "already allowed: " + strings.Join(hosts, ", "), nil
	}
	return "allowed: " + strings.Join(add, ", "), nil
}

func egressRemove(a *App, d *manifest.Doc, p *project.Project, hosts []string) (string, error) {
	removed := d.RemoveEgress(hosts)
	gone := map[string]bool{}
	for _, r := range removed {
		gone[manifest.Canon(r)] = true
	}
	var mandatory, absent []string
	for _, h := range hosts {
		switch {
		case gone[h]:
		case a.isMandatory(p, h):
			mandatory = append(mandatory, h)
		default:
			absent = append(absent, h)
		}
	}
	var msgs []string
	if len(removed) > 0 {
		msgs = append(msgs, "removed: "+strings.Join(removed, ", "))
	}
	if len(mandatory) > 0 {
		msgs = append(msgs, "kept: "+strings.Join(mandatory, ", ")+" (mandatory: abox adds it to every allowlist; see defaults.egress_mandatory in config.yaml)")
	}
	if len(absent) > 0 {
		msgs = append(msgs, "not in the allowlist: "+strings.Join(absent, ", "))
	}
	return strings.Join(msgs, "\n"), nil
}

// isMandatory reports whether the rendered policy of p has host as an entry abox added itself.
func (a *App) isMandatory(p *project.Project, host string) bool {
	pol, err := a.currentPolicy(p)
	return err == nil && pol.IsMandatory(host)
}

func egressIgnore(a *App, d *manifest.Doc, p *project.Project, hosts []string) (string, error) {
	var ignore, mandatory []string
	for _, h := range hosts {
		if a.isMandatory(p, h) {
			mandatory = append(mandatory, h)
		} else {
			ignore = append(ignore, h)
		}
	}
	var msgs []string
	if len(ignore) > 0 {
		if err := d.IgnoreEgress(ignore); err != nil {
			return "", err
		}
		msgs = append(msgs, "ignored: "+strings.Join(ignore, ", ")+" (still blocked, no longer in the review queue)")
	}
	if len(mandatory) > 0 {
		msgs = append(msgs, "not ignored: "+strings.Join(mandatory, ", ")+" (mandatory: abox allows it in every sandbox; see defaults.egress_mandatory in config.yaml)")
	}
	return strings.Join(msgs, "\n"), nil
}

func egressUnignore(_ *App, d *manifest.Doc, _ *project.Project, hosts []string) (string, error) {
	removed := d.UnignoreEgress(hosts)
	if len(removed) == 0 {
		return "not ignored: " + strings.Join(hosts, ", "), nil
	}
	return "unignored: " + strings.Join(removed, ", ") + " (blocked, and back in the review queue when seen)", nil
}

// egressReport is `abox egress list --json`.
type egressReport = telemetry.Review

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
	a.printEgress(rep)
	return nil
}

func (a *App) printEgress(rep *egressReport) {
	fmt.Fprintln(a.Out, "allowed:")
	for _, h := range rep.Allowed {
		mark := ""
		if h.Mandatory {
			mark = "  (mandatory)"
		}
		linef(a.Out, "  %s%s", h.Entry, mark)
	}
	fmt.Fprintln(a.Out, "ignored:")
	for _, h := range rep.Ignored {
		linef(a.Out, "  %s", h) // agentbox.yaml is in the workspace, which the agent writes
	}
	if len(rep.Ignored) == 0 {
		fmt.Fprintln(a.Out, "  none")
	}
	fmt.Fprintln(a.Out, "review queue (denied, newest first):")
	if len(rep.Queue) == 0 {
		fmt.Fprintln(a.Out, "  empty")
		return
	}
	rows := [][]string{{"  NAME", "SEEN AS", "COUNT", "RUNS", "LAST SEEN"}}
	for _, q := range rep.Queue {
		kind := "looked up"
		if q.Kind == telemetry.DeniedConn {
			kind = "connected to"
		}
		// Queue names come from the agent (a TLS server name may hold any byte): escape them.
		rows = append(rows, []string{"  " + termtext.Line(q.Name), kind, fmt.Sprint(q.Count), fmt.Sprint(q.Runs), q.LastSeen})
	}
	table(a.Out, rows)
	fmt.Fprintln(a.Out, "  ↳ allow with `abox egress add <host>`, or silence with `abox egress ignore <host>`")
}

// currentPolicy reads the rendered netd policy: what netd enforces.
func (a *App) currentPolicy(p *project.Project) (*policy.Netd, error) {
	pol, err := artifact.ReadNetdPolicy(p.State.Artifacts())
	var pe *fs.PathError
	switch {
	case errors.As(err, &pe):
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
	ok, port, ports, err := pol.Check(e.Host, e.Port)
	if err != nil {
		return err
	}
	switch {
	case ok:
		fmt.Fprintf(a.Out, "allowed: %s:%d\n", e.Host, port)
		return nil
	case len(ports) > 0:
		fmt.Fprintf(a.Out, "denied: %s:%d (allowed only on port %s)\n", e.Host, port, joinInts(ports))
	default:
		fmt.Fprintf(a.Out, "denied: %s:%d (not in the allowlist)\n", e.Host, port)
	}
	return silentExit(ExitError)
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ", ")
}
