package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/aboxhq/abox/internal/isolate"
	"github.com/aboxhq/abox/internal/remedy"
)

// The review commands of isolated runs (issue 21): the run's branch is in the user's
// repository once collected; these show, land or drop it. Each is one call into isolate.

type isolateOptions struct {
	dir         string
	json, patch bool
	force       bool
}

func newDiffCmd(a *App) *cobra.Command {
	var o isolateOptions
	cmd := &cobra.Command{
		Use:   "diff <run>",
		Short: "Show what an isolated run changed, execution-adjacent files first",
		Long: `Diff lists the files the run's branch abox/<run> changes against the commit the run started
from. Files that run code outside the sandbox (CI workflows, Makefiles, package.json and the
package managers' rc files, git and husky hooks, editor tasks, .devcontainer/, agentbox.yaml)
come first, marked "!". Each symlink shows its target and where it leads once merged,
resolved link by link as the filesystem would: a path in the repository, "outside the
repository: …", "into .git: …" or "unresolvable: …" (a loop, more than 40 links). A file over
the size bound, a symlink that does not lead inside the repository, a symlink of yours (status
L) the branch makes lead out, a file of a directory git would take for a repository (HEAD,
objects/, refs/: git run there reads its config and runs its hooks), and a file that replaces one
of yours that git ignores (git merge overwrites an ignored .env, or removes an ignored directory,
unasked) are marked "✖": abox merge refuses those without --force. No diff driver or textconv
runs.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error { return runDiff(c.Context(), a, o, args[0]) },
	}
	addDirFlag(cmd, &o.dir)
	cmd.Flags().BoolVar(&o.json, "json", false, "print the files as JSON")
	cmd.Flags().BoolVar(&o.patch, "patch", false, "print the patch after the list")
	return cmd
}

func newMergeCmd(a *App) *cobra.Command {
	var o isolateOptions
	cmd := &cobra.Command{
		Use:   "merge <run>",
		Short: "Merge an isolated run's branch into the current branch",
		Long: `Merge fast-forwards the current branch to the run's branch abox/<run>, or merges it, with no
hook running. It refuses a dirty working tree, a detached HEAD and a branch that moved since the
run ended; without --force it also refuses a file over the size bound, a symlink that, once
merged, leads out of the repository, into .git or nowhere abox can resolve (abox diff shows
where each leads), a file of a directory git would take for a repository, or a file that
replaces one of yours that git ignores (an ignored .env, node_modules/…), which git would
overwrite unasked.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error { return runMerge(c.Context(), a, o, args[0]) },
	}
	addDirFlag(cmd, &o.dir)
	cmd.Flags().BoolVar(&o.force, "force", false, "merge files over the size bound, symlinks out of the repository, git directories and files that replace ignored ones")
	return cmd
}

func newDiscardCmd(a *App) *cobra.Command {
	var o isolateOptions
	cmd := &cobra.Command{
		Use:   "discard <run>",
		Short: "Remove an isolated run's branch and clone",
		Args:  cobra.ExactArgs(1),
		RunE:  func(c *cobra.Command, args []string) error { return runDiscard(c.Context(), a, o, args[0]) },
	}
	addDirFlag(cmd, &o.dir)
	return cmd
}

// isolateRepo loads the project and its isolated runs. It takes no project lock: isolate takes
// it for every change.
func (a *App) isolateRepo(dir string) (*isolate.Repo, error) {
	p, err := a.loadProject(dir)
	if err != nil {
		return nil, err
	}
	return p.Isolated(), nil
}

func runDiff(ctx context.Context, a *App, o isolateOptions, id string) error {
	r, err := a.isolateRepo(o.dir)
	if err != nil {
		return err
	}
	d, err := r.Diff(ctx, id, o.patch)
	if err != nil {
		return remedy.Isolate(err, id)
	}
	if o.json {
		return a.writeJSON(d)
	}
	d.WriteText(a.Out)
	return nil
}

func runMerge(ctx context.Context, a *App, o isolateOptions, id string) error {
	r, err := a.isolateRepo(o.dir)
	if err != nil {
		return err
	}
	run, err := r.Merge(ctx, id, isolate.MergeOptions{Force: o.force})
	if err != nil {
		return remedy.Isolate(err, id)
	}
	linef(a.Out, "merged %s into %s", run.Branch, run.Into)
	return nil
}

func runDiscard(ctx context.Context, a *App, o isolateOptions, id string) error {
	r, err := a.isolateRepo(o.dir)
	if err != nil {
		return err
	}
	run, err := r.Discard(ctx, id)
	if err != nil {
		return remedy.Isolate(err, id)
	}
	linef(a.Out, "removed the branch and clone of run %s (%s)", run.ID, run.State)
	return nil
}
