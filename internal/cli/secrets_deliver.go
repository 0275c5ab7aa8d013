package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/aboxhq/abox/internal/catalog"
	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/secrets"
)

// gatewaySecrets renders the secrets file of the gateway serving u ([secrets.ForGateway]),
// from the store this host has.
func (a *App) gatewaySecrets(ctx context.Context, ps paths.Paths, u *gateway.Union, cat *catalog.Catalog) (gateway.Secrets, error) {
	open := func(ctx context.Context) (secrets.Store, error) {
		choice, err := a.secretStore(ctx, ps)
		return choice.Store, err
	}
	out, err := secrets.ForGateway(ctx, open, ps.SecretsSalt(), u, cat)
	var fe *secrets.GatewayFileError
	if errors.As(err, &fe) {
		return out, withHint(err, "store the value again with `abox secrets set NAME`")
	}
	return out, err
}

// attachedEnv reads the secrets attached to the agent from the store, as the env file the
// sandbox pipes to `docker create`, and states on every run that the agent holds them. nil when
// none is attached.
func (a *App) attachedEnv(ctx context.Context, p *project.Project) ([]byte, error) {
	attached := p.Manifest.EnvSecrets
	if len(attached) == 0 {
		return nil, nil
	}
	choice, err := a.secretStore(ctx, p.Paths)
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
