package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/remedy"
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
	u, err := a.gatewayManager().UpdateImage(ctx, ps.ConfigFile(), cfg, o.tag, func(u gateway.ImageUpdate) error {
		fmt.Fprintf(a.Out, "- %s\n+ %s\n", u.Old, u.New)
		switch {
		case o.yes:
			return nil
		case !a.TTY:
			return errorf("run `abox gateway update --yes` to pin it without a terminal", "the new digest was not pinned")
		case !a.confirm("pin gateway.image to the new digest?"):
			return errorf("nothing was changed", "cancelled")
		}
		return nil
	})
	switch {
	case err != nil:
		return remedy.GatewayUpdate(err)
	case u.Old == u.New:
		fmt.Fprintf(a.Out, "gateway.image is already pinned to %s\n", u.New)
		return nil
	}
	fmt.Fprintf(a.Out, "pinned gateway.image in %s\n", ps.ConfigFile())
	fmt.Fprintln(a.Out, "next: `abox gateway up --force` moves running gateways to it")
	return nil
}
