package remedy

import (
	"errors"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/secrets"
	"github.com/aboxhq/abox/internal/termtext"
)

// Secrets names the fix of an error of the secrets package that has no hint yet.
func Secrets(err error) error {
	if !unhinted(err) {
		return err
	}
	var (
		de *secrets.DetectError
		oe *secrets.OpenError
		ce *secrets.ConfigError
		re *secrets.ReadError
		ae *secrets.AttentionError
		ue *secrets.UnmappedError
	)
	switch {
	case errors.As(err, &de) && (errors.Is(err, docker.ErrDaemonUnreachable) || errors.Is(err, secrets.ErrNoDaemon)):
		return With(err, "start the Docker daemon (or Docker Desktop), then retry")
	case errors.As(err, &de):
		return With(err, "check that the docker CLI works (`docker version`)")
	case errors.As(err, &oe) && oe.Salt:
		return With(err, "move "+oe.File+" away; `abox secrets sync` then records fresh digests")
	case errors.As(err, &oe):
		return With(err, "fix or remove "+oe.File+"; `abox secrets sync` rebuilds it")
	case errors.As(err, &ce):
		return With(err, "fix "+ce.File)
	case errors.As(err, new(*secrets.NameError)):
		return With(err, "use letters, digits, '.', '_' and '-', starting with a letter or digit (for example github.personal_access_token)")
	case errors.As(err, &re):
		return With(err, readHint(re))
	case errors.As(err, new(*secrets.PutError)):
		return With(err, "retry with --verbose to see the docker commands")
	case errors.As(err, &ue):
		return With(err, "map it in secrets.yaml, or store it directly with `abox secrets set "+termtext.Line(ue.Name)+"`")
	case errors.As(err, new(*secrets.InUseError)):
		return With(err, "detach or undeclare it first (`abox secrets detach ENV`, `abox mcp rm SERVER`), or pass --force")
	case errors.As(err, &ae):
		return With(err, attentionHint(ae))
	case errors.As(err, new(*secrets.GatewayFileError)):
		return With(err, "store the value again with `abox secrets set NAME`")
	}
	return err
}

func readHint(re *secrets.ReadError) string {
	switch {
	case errors.Is(re, secrets.ErrEmpty):
		return "an empty secret is refused: the gateway would drop the variable"
	case errors.Is(re, secrets.ErrLoosePerms):
		return "`chmod 600 " + re.File + "`, or pass --allow-loose-perms"
	case errors.Is(re, secrets.ErrNoTerminal):
		return "pipe the value with `abox secrets set " + re.Name + " --stdin`, or use --file or --env"
	}
	return "nothing was stored; fix the source and retry"
}

func attentionHint(ae *secrets.AttentionError) string {
	switch ae.Fix.Status {
	case secrets.MissingInStore, secrets.Unmapped:
		return "store it with `abox secrets set " + ae.Fix.Secret + "`, or map it in secrets.yaml and run `abox secrets sync`"
	case secrets.Drifted:
		return "run `abox secrets sync` to store the current values"
	}
	return "fix the sources named in the detail column, then run `abox secrets " + ae.Verb + "` again"
}
