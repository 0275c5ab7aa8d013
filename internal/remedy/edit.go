package remedy

import (
	"errors"

	"github.com/aboxhq/abox/internal/approval"
	"github.com/aboxhq/abox/internal/catalog"
	"github.com/aboxhq/abox/internal/edit"
)

// Edit names the fix of a refused manifest edit ([edit.Apply]). The diff of an unapproved
// manifest is the caller's to show first.
func Edit(err error) error {
	switch {
	case errors.As(err, new(*edit.UnapprovedError)):
		return With(err, "review the change and approve it with `abox up` first")
	case errors.As(err, new(*approval.InvalidEditError)):
		return With(err, "nothing was written")
	}
	return err
}

// Egress names the fix of a refused or incomplete egress edit that has no hint yet.
func Egress(err error) error {
	var ignored *edit.IgnoredError
	var stale *edit.StaleError
	if !unhinted(err) {
		return err
	}
	switch {
	case errors.As(err, &ignored):
		return With(err, "run `abox egress unignore "+ignored.Host+"` first")
	case errors.As(err, &stale) && stale.Skipped != nil:
		// Docker could not say what runs: a sandbox it did not list may still reach what was
		// removed. Not knowing is not success.
		return With(err, "check that Docker answers (`docker ps`), then stop this project's running sandboxes or reload each with `docker kill --signal HUP <name>`")
	case errors.As(err, &stale):
		return With(err, "stop it (`docker stop` the agent, or Ctrl-C its run) or reload it with `docker kill --signal HUP <name>`")
	}
	return err
}

// MCP names the fix of a refused server edit that has no hint yet.
func MCP(err error) error {
	var (
		alreadyRemote *edit.AlreadyRemoteError
		remote        *edit.RemoteError
	)
	if !unhinted(err) {
		return err
	}
	switch {
	case errors.As(err, new(*catalog.BadNameError)):
		return With(err, "server names are letters, digits, . _ -")
	case errors.As(err, new(*catalog.UnknownServerError)):
		return With(err, "list known servers with `abox mcp list --all`, or define it in custom-servers.yaml")
	case errors.As(err, &alreadyRemote):
		return With(err, "narrow it with `abox mcp add "+alreadyRemote.Server+" --tool NAME`, or replace it with `abox mcp add-remote`")
	case errors.As(err, &remote):
		return With(err, "remove it with `abox mcp rm-remote "+remote.Server+"`")
	case errors.As(err, new(*edit.NotDeclaredError)):
		return With(err, "see the declared servers with `abox mcp list`")
	}
	return err
}

// HostConfig names the fix of a host's MCP configuration file that does not parse.
func HostConfig(err error) error {
	var ce *catalog.HostConfigError
	switch {
	case errors.As(err, &ce) && ce.ClaudeConfig != "":
		return With(err, "fix the file, or point ABOX_CLAUDE_CONFIG elsewhere")
	case errors.As(err, &ce):
		return With(err, "fix or remove the file")
	}
	return err
}
