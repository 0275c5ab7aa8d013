package cli

import (
	"errors"
	"fmt"

	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/provision"
	"github.com/aboxhq/abox/internal/sandbox"
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
	case provision.Swept:
		fmt.Fprintf(a.Out, "removed %s of isolated runs (branches already in your repository stay; `abox merge <run>` still lands one)\n",
			plural(ev.Clones, "clone", "clones"))
	}
}

// explainProvision names the fix of an error of [provision]: a refused approval, or the step
// that failed. profile is the project's, whose gateway a failed reconciliation names. Other
// errors stay as they are: a refusal of a lower package carries its own hint or sentinel.
func (a *App) explainProvision(err error, profile string) error {
	var nr *provision.NotReplacedError
	var se *provision.StepError
	switch {
	case errors.Is(err, provision.ErrUnconfirmed):
		return withHint(err, "review the change, then run `abox up --yes` to approve it")
	case errors.As(err, &nr):
		return withHint(err, "review agentbox.yaml, then run `abox up --yes` to approve it as written")
	case errors.Is(err, provision.ErrDeclined):
		return withHint(err, "edit agentbox.yaml, or run `abox up` again to approve")
	case !errors.As(err, &se):
		return err
	}
	switch se.Step {
	case provision.StepRender:
		return withHint(err, "fix the manifest or config.yaml, then run `abox render`")
	case provision.StepImages:
		return a.explainBuild(err)
	case provision.StepVolume:
		return explainVolume(err)
	case provision.StepGateway:
		return a.explainGateway(err, profile)
	case provision.StepBaseline:
		return withHint(err, "run `abox doctor`, then `abox doctor --accept-git --accept-watch` to record it again")
	case provision.StepSpares:
		return withHint(err, "run `abox nuke` again once it started")
	case provision.StepCaches:
		return withHint(err, "stop what uses the volume, then run `abox nuke` again")
	case provision.StepClones:
		return withHint(err, "remove the clone by hand, or run `abox nuke` again")
	}
	return err
}

// explainVolume names the fix of a ~/.claude volume that could not be given to the agent
// ([sandbox.OwnClaudeVolume]).
func explainVolume(err error) error {
	var re *sandbox.ReownError
	switch {
	case errors.Is(err, sandbox.ErrNoAgentUser):
		return withHint(err, "run `abox render` to write runspec.json again")
	case errors.As(err, &re):
		return withHint(err, "run `abox up` again once the agent image is built")
	}
	return err
}
