package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

const rootLong = `abox gives every project a disposable sandbox in which a Claude Code agent runs
headless, treated as hostile. It limits how far the agent reaches — filesystem, network egress,
credentials, execution — and proves it: every generated artifact is readable, and abox doctor
audits the live machine against them.

Quick start:
  abox init          pick servers, toolchains and egress; writes agentbox.yaml
  abox up            network, images, gateway; records the approved manifest
  abox shell         once, to log Claude Code in (kept in a per-project volume)
  abox run "prompt"  a headless run in a fresh sandbox, torn down afterwards
  abox doctor        the audit, including what the agent tried to reach

Environment:
  ABOX_CONFIG_HOME   configuration (default $XDG_CONFIG_HOME/abox or ~/.config/abox)
  ABOX_STATE_HOME    state (default $XDG_STATE_HOME/abox or ~/.local/state/abox)
  NO_COLOR           no colour in output

` + exitHelp

func newRootCmd(a *App) *cobra.Command {
	root := &cobra.Command{
		Use:           "abox",
		Short:         "Disposable, network-restricted sandboxes for Claude Code agents",
		Long:          rootLong,
		Version:       a.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
		CompletionOptions: cobra.CompletionOptions{
			HiddenDefaultCmd: false,
		},
	}
	root.SetVersionTemplate("abox {{.Version}}\n")
	root.PersistentFlags().BoolVar(&a.Verbose, "verbose", false, "print every docker command abox runs")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return withHint(err, fmt.Sprintf("run `%s --help` for the flags it takes", c.CommandPath()))
	})
	root.AddGroup(
		&cobra.Group{ID: "project", Title: "Project:"},
		&cobra.Group{ID: "sandbox", Title: "Sandbox:"},
		&cobra.Group{ID: "policy", Title: "Policy:"},
		&cobra.Group{ID: "audit", Title: "Audit:"},
	)
	add := func(group string, cmds ...*cobra.Command) {
		for _, c := range cmds {
			c.GroupID = group
			root.AddCommand(c)
		}
	}
	add("project", newInitCmd(a), newRenderCmd(a), newUpCmd(a), newNukeCmd(a))
	add("sandbox", newRunCmd(a), newShellCmd(a))
	add("sandbox", newDiffCmd(a), newMergeCmd(a), newDiscardCmd(a))
	add("policy", newEgressCmd(a), newMCPCmd(a), newSecretsCmd(a), newGatewayCmd(a))
	add("audit", newDoctorCmd(a), newLogsCmd(a))
	root.AddCommand(newNetdCmd(a), newMCPProbeCmd(a), newSpareNetdCmd(a), newWardenCmd(a))
	return root
}

// addDirFlag adds -C/--dir, where workspace discovery starts.
func addDirFlag(c *cobra.Command, dir *string) {
	c.Flags().StringVarP(dir, "dir", "C", ".", "the project directory (abox looks for agentbox.yaml here and above)")
}

// groupCmd is a command that only holds subcommands; run bare, it prints its help.
func groupCmd(use, short string, subs ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.NoArgs,
		RunE:  func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	c.AddCommand(subs...)
	return c
}
