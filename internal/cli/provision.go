package cli

import (
	"fmt"

	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/provision"
)

// provisionEnv is what [provision] needs of this App for p: questions on the terminal only,
// events printed as they come. noCache is `abox up --no-cache`.
func (a *App) provisionEnv(p *project.Project, noCache bool) *provision.Env {
	e := &provision.Env{
		Docker: a.docker(), Spec: a.spec, Images: a.builder(noCache), Gateway: a.gatewayEnv(p.Config, p.Custom, p.Paths),
		Executable: a.Executable, ExecutableSHA256: a.binarySHA256, Home: a.getenv("HOME"),
		Ready: a.requireDaemon, Report: a.show, Progress: a.progressf, Now: a.Now,
	}
	if a.TTY {
		e.Confirm = a.confirm
	}
	return e
}

// show prints an event of [provision]: what a widening or a corrupt approval asks about on
// stderr, with warnings and progress; results on stdout.
func (a *App) show(ev provision.Event) {
	switch ev := ev.(type) {
	case provision.Widened:
		fmt.Fprintf(a.Err, "agentbox.yaml reaches further than the manifest approved at the last `abox up`:\n")
		for _, l := range ev.Lines {
			linef(a.Err, "  %s", l)
		}
	case provision.Replacing:
		linef(a.Err, "%v", ev.Corrupt)
		fmt.Fprintf(a.Err, "approving replaces it with agentbox.yaml as written\n")
	case provision.Left:
		a.progressf("%s left the %s gateway; `abox gateway up %s` reconciles it", ev.Project, ev.Profile, ev.Profile)
	case provision.Warned:
		a.warnf("", "%s", ev.Message)
	case provision.NoContext:
		a.warnf("create it, or remove it from mounts.context", "context directory %s does not exist; runs will fail until it does", ev.Path)
	case provision.Reconciled:
		fmt.Fprintln(a.Out, ev.Result)
	case provision.Baselined:
		ev.Recorded.WriteText(a.Out)
	case provision.Unbound:
		if ev.Err != nil {
			a.warnf("remove it with `abox gateway down "+ev.Profile+"`", "removing the unused %s gateway: %v", ev.Profile, ev.Err)
		} else if ev.Removed {
			fmt.Fprintf(a.Out, "removed %s: no project uses it any more\n", gateway.Name(ev.Profile))
		}
	case provision.Removed:
		fmt.Fprintf(a.Out, "removed %s, the artifacts and the review copy of %s\n", plural(ev.Containers, "container", "containers"), ev.Project)
	case provision.Reaped:
		if ev.Recorded {
			fmt.Fprintf(a.Out, "finished run %s, whose abox and warden were gone, and recorded it as %s\n", ev.Run, ev.Outcome)
		}
	case provision.Swept:
		fmt.Fprintf(a.Out, "removed %s of isolated runs (branches already in your repository stay; `abox merge <run>` still lands one)\n",
			plural(ev.Clones, "clone", "clones"))
	}
}
