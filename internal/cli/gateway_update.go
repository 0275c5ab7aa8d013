package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/gateway"
)

type gatewayUpdateOptions struct {
	tag string
	yes bool
}

func newGatewayUpdateCmd(a *App) *cobra.Command {
	var opts gatewayUpdateOptions
	cmd := &cobra.Command{
		Use:   "update",
		Short: "Re-resolve the gateway image tag to a digest and pin it",
		Long: `Update pulls the gateway image tag (default ` + gateway.DefaultImageTag + `), reads the digest the
registry gave it, shows the change and, once confirmed, pins gateway.image in config.yaml to
that digest. Running gateways keep their image until ` + "`abox gateway up --force`" + `.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runGatewayUpdate(c.Context(), a, opts) },
	}
	cmd.Flags().StringVar(&opts.tag, "tag", gateway.DefaultImageTag, "the image tag to resolve")
	cmd.Flags().BoolVarP(&opts.yes, "yes", "y", false, "pin without asking")
	return cmd
}

func runGatewayUpdate(ctx context.Context, a *App, o gatewayUpdateOptions) error {
	if !config.IsImageRef(o.tag) || strings.HasPrefix(o.tag, "sha256:") {
		return errorf("pass a tag such as "+gateway.DefaultImageTag, "--tag %q is not an image reference", o.tag)
	}
	cfg, _, ps, err := a.loadConfig()
	if err != nil {
		return err
	}
	if err := a.requireDaemon(ctx); err != nil {
		return err
	}
	pinned, err := a.gatewayManager().ResolveImage(ctx, o.tag)
	var pe *gateway.PullError
	var nd *gateway.NoDigestError
	switch {
	case errors.As(err, &pe):
		return withHint(err, "check the tag and that the registry is reachable")
	case errors.As(err, &nd):
		return withHint(err, "pass a tag that comes from a registry")
	case err != nil:
		return err
	}
	old := cfg.Gateway.Image
	if old == pinned {
		fmt.Fprintf(a.Out, "gateway.image is already pinned to %s\n", pinned)
		return nil
	}
	fmt.Fprintf(a.Out, "- %s\n+ %s\n", old, pinned)
	if !o.yes {
		if !a.TTY {
			return errorf("run `abox gateway update --yes` to pin it without a terminal", "the new digest was not pinned")
		}
		if !a.confirm("pin gateway.image to the new digest?") {
			return errorf("nothing was changed", "cancelled")
		}
	}
	if _, err := config.EditFile(ps.ConfigFile(), cfg, func(d *config.Doc) error { return d.SetGatewayImage(pinned) }); err != nil {
		return err
	}
	fmt.Fprintf(a.Out, "pinned gateway.image in %s\n", ps.ConfigFile())
	fmt.Fprintln(a.Out, "next: `abox gateway up --force` moves running gateways to it")
	return nil
}
