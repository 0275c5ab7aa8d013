package remedy

import (
	"errors"
	"fmt"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/images"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/owner"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/provision"
	"github.com/aboxhq/abox/internal/sandbox"
	"github.com/aboxhq/abox/internal/termtext"
)

// Load names the fix of an error of [project.Load] or [project.LoadConfig].
func Load(err error) error {
	var ce *project.ConfigError
	var pe *project.ProfileError
	switch {
	case errors.Is(err, manifest.ErrNotFound):
		return With(err, "run `abox init` in the project directory first")
	case errors.As(err, &ce):
		return With(err, "fix "+ce.File)
	case errors.As(err, new(*project.ManifestError)):
		return With(err, "edit agentbox.yaml, then run `abox render`")
	case errors.As(err, &pe):
		return With(err, fmt.Sprintf("add it under profiles: in %s, or set profile: to one of the known ones", pe.ConfigFile))
	}
	return err
}

// Identity names the fix of a workspace whose owner cannot be the agent's ([owner.RootOwnedError]).
func Identity(err error) error {
	var ro *owner.RootOwnedError
	if errors.As(err, &ro) {
		return With(err, fmt.Sprintf("chown the project to the user who works on it (`chown -R <user>: %s`), or set agent.uid and agent.gid in config.yaml", termtext.Line(ro.Workspace)))
	}
	return err
}

// Daemon names the fix of a docker daemon that does not answer `docker version`.
func Daemon(err error) error {
	switch {
	case errors.Is(err, docker.ErrDaemonUnreachable):
		return With(err, "start the Docker daemon (`dockerd`, or Docker Desktop), then retry")
	case err != nil:
		return With(err, "check that the docker CLI is installed and can reach its daemon (`docker version`)")
	}
	return nil
}

// Provision names the fix of an error of [provision]: a refused approval, or the step that
// failed. profile is the project's, whose gateway a failed reconciliation names. Other errors
// stay as they are: a refusal of a lower package carries its own hint or sentinel.
func Provision(err error, profile string) error {
	var se *provision.StepError
	switch {
	case errors.Is(err, provision.ErrUnconfirmed):
		return With(err, "review the change, then run `abox up --yes` to approve it")
	case errors.As(err, new(*provision.NotReplacedError)):
		return With(err, "review agentbox.yaml, then run `abox up --yes` to approve it as written")
	case errors.Is(err, provision.ErrDeclined):
		return With(err, "edit agentbox.yaml, or run `abox up` again to approve")
	case !errors.As(err, &se):
		return err
	}
	switch se.Step {
	case provision.StepRender:
		return With(err, "fix the manifest or config.yaml, then run `abox render`")
	case provision.StepImages:
		return Build(err)
	case provision.StepVolume:
		return volume(err)
	case provision.StepGateway:
		return Gateway(err, profile)
	case provision.StepBaseline:
		return With(err, "run `abox doctor`, then `abox doctor --accept-git --accept-watch` to record it again")
	case provision.StepSpares:
		return With(err, "run `abox nuke` again once it started")
	case provision.StepCaches:
		return With(err, "stop what uses the volume, then run `abox nuke` again")
	case provision.StepClones:
		return With(err, "remove the clone by hand, or run `abox nuke` again")
	}
	return err
}

// Build names the fix of an error of [images.Builder]: a refused input is a boundary refusal
// (exit 3); a failed build names the fix of the cause its log shows (the caller shows it).
func Build(err error) error {
	var ie *images.Error
	switch {
	case errors.As(err, &ie) && ie.Refused:
		return Boundary(err)
	case errors.As(err, new(*images.BuildError)):
		return With(err, "fix the cause above; re-run `abox up` (add --no-cache to rebuild from scratch)")
	}
	return err
}

// volume names the fix of a ~/.claude volume that could not be given to the agent
// ([sandbox.OwnClaudeVolume]).
func volume(err error) error {
	switch {
	case errors.Is(err, sandbox.ErrNoAgentUser):
		return With(err, "run `abox render` to write runspec.json again")
	case errors.As(err, new(*sandbox.ReownError)):
		return With(err, "run `abox up` again once the agent image is built")
	}
	return err
}
