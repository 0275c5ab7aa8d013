package manifest

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aboxhq/abox/internal/egress"
	"github.com/aboxhq/abox/internal/termtext"
)

// Command arguments that become manifest values are checked here, by the same rules as the
// manifest's own fields, and every bad one is reported with its position, as an [*Error] whose
// Source names the command.

// ParseHostArgs checks every argument as an egress entry and returns their canonical forms,
// without duplicates.
func ParseHostArgs(source string, args []string) ([]string, error) {
	var ps []Problem
	var out []string
	for _, h := range args {
		e, err := egress.Parse(h)
		if err != nil {
			p := Problem{Loc: "argument", Msg: err.Error(), Hint: "write a host such as example.com, *.example.com or github.com:22"}
			var ee *egress.Error
			if errors.As(err, &ee) && ee.Hint != "" {
				p.Hint = ee.Hint
			}
			ps = append(ps, p)
			continue
		}
		if !slices.Contains(out, e.String()) {
			out = append(out, e.String())
		}
	}
	if len(ps) > 0 {
		return nil, &Error{Source: source, Problems: ps}
	}
	return out, nil
}

// EnvSecret is one ENV=NAME argument: the agent's variable ENV holds the stored secret NAME.
type EnvSecret struct{ Env, Secret string }

// ParseEnvSecretArgs parses ENV=NAME arguments, as env_secrets holds them: ENV a variable name
// that abox does not set itself, NAME a secret name.
func ParseEnvSecretArgs(source string, args []string) ([]EnvSecret, error) {
	var pairs []EnvSecret
	var problems []Problem
	for i, arg := range args {
		loc := fmt.Sprintf("argument %d (%s)", i+1, termtext.Line(arg))
		env, name, ok := strings.Cut(arg, "=")
		switch {
		case !ok || env == "" || name == "":
			problems = append(problems, Problem{Loc: loc, Msg: "is not ENV=NAME", Hint: "write the variable, '=', and the secret's name: API_KEY=acme.api_key"})
		case !IsEnvName(env):
			problems = append(problems, Problem{Loc: loc, Msg: fmt.Sprintf("%q is not a valid environment variable name", termtext.Line(env)),
				Hint: "use letters, digits and '_', not starting with a digit"})
		case slices.Contains(ReservedEnv, env) || strings.HasPrefix(env, "ABOX_"):
			problems = append(problems, Problem{Loc: loc, Msg: fmt.Sprintf("%s is set by abox itself and cannot carry a secret", env),
				Hint: "choose another variable name"})
		case !IsSecretName(name):
			problems = append(problems, Problem{Loc: loc, Msg: fmt.Sprintf("%q is not a valid secret name", termtext.Line(name)),
				Hint: "use letters, digits, '.', '_' and '-', starting with a letter or digit"})
		default:
			pairs = append(pairs, EnvSecret{Env: env, Secret: name})
		}
	}
	if len(problems) > 0 {
		return nil, &Error{Source: source, Problems: problems}
	}
	return pairs, nil
}

// ParseEnvArgs checks ENV arguments that name the agent's variables only, as `abox secrets
// detach` takes them: a bare ENV, never ENV=NAME.
func ParseEnvArgs(source string, args []string) error {
	for i, env := range args {
		if !IsEnvName(env) {
			return &Error{Source: source, Problems: []Problem{{
				Loc: fmt.Sprintf("argument %d", i+1), Msg: fmt.Sprintf("%q is not a valid environment variable name", termtext.Line(env)),
				Hint: "name the variable only, without =NAME: " + source + " API_KEY"}}}
		}
	}
	return nil
}

// SplitAttached sorts envs into those env_secrets attaches a secret to and those it does not,
// each in envs' order.
func (m *Manifest) SplitAttached(envs []string) (attached, absent []string) {
	for _, env := range envs {
		if _, ok := m.EnvSecrets[env]; ok {
			attached = append(attached, env)
		} else {
			absent = append(absent, env)
		}
	}
	return attached, absent
}

// ParseRemoteArgs builds the remote server that `abox mcp add-remote` declares from its flags:
// headers as "Name: value", secrets as "name=ENV". A malformed flag is reported with its flag;
// the manifest's validation then checks every value in place.
func ParseRemoteArgs(source string, r RemoteServer, headers, secrets []string) (RemoteServer, error) {
	var ps []Problem
	for _, h := range headers {
		k, v, ok := strings.Cut(h, ":")
		if !ok || strings.TrimSpace(k) == "" {
			ps = append(ps, Problem{Loc: "--header", Msg: fmt.Sprintf("%q is not 'Name: value'", termtext.Line(h)),
				Hint: "write --header 'Authorization: Bearer ${TOKEN}'"})
			continue
		}
		if r.Headers == nil {
			r.Headers = map[string]string{}
		}
		r.Headers[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	for _, s := range secrets {
		name, env, ok := strings.Cut(s, "=")
		if !ok || name == "" || env == "" {
			ps = append(ps, Problem{Loc: "--secret", Msg: fmt.Sprintf("%q is not name=ENV", termtext.Line(s)),
				Hint: "write --secret docs.token=DOCS_TOKEN"})
			continue
		}
		r.Secrets = append(r.Secrets, SecretEnv{Name: name, Env: env})
	}
	if len(ps) > 0 {
		return r, &Error{Source: source, Problems: ps}
	}
	return r, nil
}

// InitArgs are the values `abox init` takes from its flags.
type InitArgs struct {
	Project, Profile, PermissionMode string
	Servers, Egress, Toolchains      []string
	Masks                            []string
	// Credential names the secret netd injects as the Claude credential (config.yaml's
	// claude_code.credential); empty leaves the credential mode as it is.
	Credential string
}

// CheckInitArgs checks every value init's flags give, by the manifest's own rules, before
// anything is read or written; each bad one is reported with its flag.
func CheckInitArgs(source string, o InitArgs) error {
	var ps []Problem
	bad := func(flag, msg, hint string) { ps = append(ps, Problem{Loc: flag, Msg: msg, Hint: hint}) }
	if o.Project != "" && !IsProjectName(o.Project) {
		bad("--project", fmt.Sprintf("%q is not a valid project name", o.Project), "use 1–64 of a-z 0-9 . _ -, starting with a letter or digit")
	}
	if o.Profile != "" && !IsProjectName(o.Profile) {
		bad("--profile", fmt.Sprintf("%q is not a valid profile name", o.Profile), "use 1–64 of a-z 0-9 . _ -")
	}
	for _, s := range o.Servers {
		if !IsServerName(s) {
			bad("--server", fmt.Sprintf("%q is not a valid server name", s), "server names are letters, digits, . _ -")
		}
	}
	for _, h := range o.Egress {
		if _, err := egress.Parse(h); err != nil {
			var ee *egress.Error
			hint := "write a host name such as example.com, *.example.com or github.com:22"
			if errors.As(err, &ee) && ee.Hint != "" {
				hint = ee.Hint
			}
			bad("--egress", err.Error(), hint)
		}
	}
	for _, t := range o.Toolchains {
		if r, ok := Uninstallable[t]; ok {
			bad("--toolchain", r.Why, r.Hint)
		} else if !slices.Contains(Toolchains, t) {
			bad("--toolchain", fmt.Sprintf("%q is not a known toolchain", t), "choose from "+strings.Join(Installable(), ", "))
		}
	}
	for _, m := range o.Masks {
		if err := CheckRelGlob(m); err != nil {
			bad("--mask", err.Error(), "write a path relative to the project, e.g. .env or secrets/")
		}
	}
	if o.PermissionMode != "" && !slices.Contains(PermissionModes, o.PermissionMode) {
		bad("--permission-mode", fmt.Sprintf("%q is not a permission mode", o.PermissionMode), "choose from "+strings.Join(PermissionModes, ", "))
	}
	if o.Credential != "" && !IsSecretName(o.Credential) {
		bad("--credential", fmt.Sprintf("%q is not a secret name", termtext.Line(o.Credential)),
			"name the secret as `abox secrets set <name>` stores it: 1–128 of A-Z a-z 0-9 . _ -, starting with a letter or digit")
	}
	if len(ps) > 0 {
		return &Error{Source: source, Problems: ps}
	}
	return nil
}
