package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/aboxhq/abox/internal/catalog"
	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/secrets"
)

// gatewaySecrets renders the secrets file of the gateway serving u: the secrets its servers and
// remote servers declare, from the store, and its salted digest for the fingerprint. It writes
// nothing ([gateway.Manager.Up] does) and asks the daemon which store the host has only when
// some server declares a secret.
func (a *App) gatewaySecrets(ctx context.Context, ps paths.Paths, u *gateway.Union, cat *catalog.Catalog) (gateway.Secrets, error) {
	needs := secrets.GatewayNeeds(u, cat)
	if len(needs) == 0 {
		return gateway.Secrets{}, nil
	}
	choice, err := a.secretStore(ctx, ps)
	if err != nil {
		return gateway.Secrets{}, err
	}
	data, missing, err := secrets.GatewayFile(ctx, choice.Store, needs)
	if err != nil {
		return gateway.Secrets{}, withHint(fmt.Errorf("rendering the %s gateway's secrets: %w", u.Profile, err),
			"store the value again with `abox secrets set NAME`")
	}
	out := gateway.Secrets{Data: data}
	for _, n := range missing {
		out.Missing = append(out.Missing, fmt.Sprintf("%s (%s)", n.Secret, n))
	}
	if len(data) > 0 {
		salt, err := secrets.LoadSalt(ps.SecretsSalt())
		if err != nil {
			return gateway.Secrets{}, err
		}
		out.Digest = secrets.NewDigester(salt, 0).Digest(data)
	}
	return out, nil
}

// attachedEnv reads the secrets attached to the agent from the store, as the env file the
// sandbox pipes to `docker create`, and states on every run that the agent holds them. nil when
// none is attached.
func (a *App) attachedEnv(ctx context.Context, p *project) ([]byte, error) {
	attached := p.manifest.EnvSecrets
	if len(attached) == 0 {
		return nil, nil
	}
	choice, err := a.secretStore(ctx, p.paths)
	if err != nil {
		return nil, err
	}
	data, err := secrets.EnvFile(ctx, choice.Store, attached)
	var me *secrets.MissingError
	if errors.As(err, &me) {
		n := me.Needs[0]
		return nil, errorf(fmt.Sprintf("store it with `abox secrets set %s`, or take it back with `abox secrets detach %s`", n.Secret, n.By),
			"attached secrets are %v", err)
	}
	if err != nil {
		return nil, err
	}
	a.warnAttached(p, attached)
	return data, nil
}
