package remedy

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aboxhq/abox/internal/catalog"
	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/gateway"
)

// Gateway names the fix of an error of the gateway package for profile; an error it does not
// know stays as it is. The log of a gateway that does not answer ([gateway.UpError]) is the
// caller's to show.
func Gateway(err error, profile string) error {
	var up *gateway.UpError
	var unknown *gateway.UnknownProfileError
	var unused *gateway.UnusedError
	var leak *gateway.LeakError
	var plan *gateway.PlanError
	var sec *gateway.SecretsError
	switch {
	case errors.As(err, &up):
		return gatewayUp(up)
	case errors.As(err, &unknown):
		return With(err, "known profiles: "+strings.Join(unknown.Known, ", "))
	case errors.As(err, &unused):
		return With(err, "declare one with `abox mcp add SERVER` in a project of the profile")
	case errors.As(err, &leak):
		return With(err, Leak(leak.Leaks[0]))
	case errors.As(err, &plan):
		hint := "fix the catalog, custom-servers.yaml or the projects' manifests, then run `abox gateway up " + plan.Profile + "`"
		if plan.Kind != "" {
			hint = Finding(plan.Kind)
		}
		return With(err, hint)
	case errors.As(err, &sec):
		return With(err, fmt.Sprintf("store it with `abox secrets set %s` (or map it in secrets.yaml and run `abox secrets sync`), then run this again", sec.Secret()))
	}
	return err
}

// gatewayUp names the fix of an error of [gateway.Manager.Up].
func gatewayUp(up *gateway.UpError) error {
	profile := up.Profile
	var ue *gateway.UnhealthyError
	var missing *gateway.ImageMissingError
	var open *gateway.OpenError
	switch {
	case errors.As(up, &open):
		return Boundary(With(up, openGatewayHint(profile)))
	case errors.As(up, &ue) && ue.Unauthorized:
		return With(up, "the gateway holds another token; recreate it with `abox gateway up --force "+profile+"`")
	case errors.As(up, &ue):
		return With(up, "read the log above; `abox gateway up --force "+profile+"` recreates the gateway")
	case errors.As(up, &missing):
		return With(up, "build or load the image on this machine (`docker image ls` lists them), then retry")
	case errors.Is(up, docker.ErrDaemonUnreachable):
		return With(up, "start the Docker daemon, then retry")
	}
	return With(up, "retry with `abox gateway up --force "+profile+"`, adding --verbose to see every docker command")
}

// Finding names the fix of a catalog finding of kind k.
func Finding(k catalog.Kind) string {
	switch k {
	case catalog.Unknown:
		return "list known servers with `abox mcp list --all`, define it in custom-servers.yaml, or remove it with `abox mcp rm`"
	case catalog.ToolCollision:
		return "give one entry a prefix: in its catalog, or remove one of the servers with `abox mcp rm`"
	case catalog.UnpinnedSigned, catalog.Unpinned:
		return "pin the image as repo@sha256:<digest> in its catalog entry"
	case catalog.LocalImage:
		return "pin it as repo@sha256:<digest> and drop pin: false in custom-servers.yaml to have it verified and pulled"
	default:
		return "install the Docker MCP Toolkit catalog, or set ABOX_DOCKER_MCP_HOME to where it is"
	}
}

// Leak names the ways out of a [gateway.Leak]: make the tools known, narrow the server (or
// correct the narrowing), or give the project a gateway of its own.
func Leak(l gateway.Leak) string {
	move := fmt.Sprintf("move %s to a profile of its own (profile: in its agentbox.yaml, then `abox up`)", l.Project)
	if len(l.Unlisted) == 0 {
		return fmt.Sprintf("take the other project's tools out of %s's tools: (`abox mcp add SERVER --tool NAME` replaces a narrowing), or %s",
			l.Project, move)
	}
	s := l.Unlisted[0]
	return fmt.Sprintf("list %s's tools (tools:) in custom-servers.yaml, narrow it in %s with `abox mcp add %s --tool NAME`, or %s",
		s, l.Project, s, move)
}

// openGatewayHint is the fix for a gateway that does not enforce its token.
func openGatewayHint(profile string) string {
	return "pin a gateway that enforces its token (docker/mcp-gateway v0.43.1 or later) with `abox gateway update`, then `abox gateway up --force " +
		profile + "`; until then `abox gateway down " + profile + "` stops this one"
}

// GatewayAuth names the fix of a gateway that has not been seen to refuse requests without its
// token ([gateway.Manager.ProveAuth]): a boundary refusal (exit 3) when the token is missing
// or the proof failed.
func GatewayAuth(err error, profile string) error {
	var te *gateway.TokenError
	var ae *gateway.AuthError
	switch {
	case errors.As(err, &te):
		return Boundary(With(err, "run `abox up` to mint it and start the gateway"))
	case errors.As(err, &ae):
		return Boundary(auth(err, profile))
	}
	return err
}

// auth names the fix of an error of [gateway.Manager.CheckAuth].
func auth(err error, profile string) error {
	var open *gateway.OpenError
	var ue *gateway.UnhealthyError
	switch {
	case errors.As(err, &open):
		return With(err, openGatewayHint(profile))
	case errors.As(err, &ue) && ue.Unauthorized:
		return With(err, "the gateway holds another token; recreate it with `abox gateway up --force "+profile+"`")
	case errors.Is(err, docker.ErrNotFound):
		return With(err, "run `abox up` to build the netd image the probe runs in")
	}
	return With(err, "`abox gateway status "+profile+"` shows its health; `abox gateway up --force "+profile+"` recreates it")
}

// RunningTools names the fix of a failed listing of the tools of profile's running gateway
// ([gateway.RunningTools]).
func RunningTools(err error, profile string) error {
	switch {
	case errors.Is(err, gateway.ErrNotRunning):
		return With(err, "start it with `abox up`")
	case errors.Is(err, gateway.ErrNoProbeImage):
		return With(err, "run `abox up` to build the netd image the probe runs in")
	case errors.Is(err, gateway.ErrNoAnswer):
		return With(err, "see `abox gateway status "+profile+"`")
	}
	return Gateway(err, profile)
}

// GatewayUpdate names the fix of a failed [gateway.Manager.UpdateImage].
func GatewayUpdate(err error) error {
	switch {
	case errors.As(err, new(*gateway.PullError)):
		return With(err, "check the tag and that the registry is reachable")
	case errors.As(err, new(*gateway.NoDigestError)):
		return With(err, "pass a tag that comes from a registry")
	}
	return err
}
