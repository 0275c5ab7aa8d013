package setup

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/aboxhq/abox/internal/catalog"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/secrets"
)

// Report is what init wrote, and what the credential mode needs before the first run. Init
// never asks for the credential's value, nor shows it: it names the command that stores it.
type Report struct {
	Updated    bool // agentbox.yaml existed
	Path       string
	Manifest   *manifest.Manifest
	Credential string // the injected credential's secret, or "" for the login volume
	// CredentialMissing: the store holds no secret named Credential yet.
	CredentialMissing bool
	// CredentialErr says why the stored credential cannot be handed to netd.
	CredentialErr error
}

// Report describes the written plan; store is the secrets store's directory.
func (pl *Plan) Report(store string) *Report {
	r := &Report{Updated: pl.st.Existing != nil, Path: pl.ManifestPath(), Manifest: pl.Manifest, Credential: pl.st.Config.ClaudeCode.Credential}
	if r.Credential != "" {
		_, err := secrets.CredentialFile(store, r.Credential)
		r.CredentialMissing = errors.Is(err, secrets.ErrCredentialMissing)
		if !r.CredentialMissing {
			r.CredentialErr = err
		}
	}
	return r
}

// WriteText writes the report as init prints it; CredentialErr is the caller's to warn about.
func (r *Report) WriteText(w io.Writer) {
	m := r.Manifest
	verb := "wrote"
	if r.Updated {
		verb = "updated"
	}
	fmt.Fprintf(w, "%s %s (project %s, profile %s)\n", verb, r.Path, m.Project, m.Profile)
	fmt.Fprintf(w, "  servers: %s\n", listOrNone(m.DeclaredServers()))
	fmt.Fprintf(w, "  toolchains: %s\n", listOrNone(m.Toolchains))
	fmt.Fprintf(w, "  egress: %s (plus the Claude Code hosts abox always allows)\n", listOrNone(m.Egress))
	fmt.Fprintf(w, "  permission mode: %s\n", m.Run.PermissionMode)
	if r.Credential == "" {
		fmt.Fprintf(w, "  Claude credential: the login volume (a claude.ai login; run `abox shell` once to log in)\n")
	} else {
		fmt.Fprintf(w, "  Claude credential: secret %s, injected by netd (the agent holds a placeholder)\n", r.Credential)
	}
	if r.CredentialMissing {
		fmt.Fprintf(w, "next: store the credential with `abox secrets set %s` (an API key, or the token `claude setup-token` prints)\n", r.Credential)
	}
	fmt.Fprintf(w, "next: `abox up` builds the images and records this manifest as approved\n")
}

// ServerLabel shows a server as the picker offers it, with what it needs: secrets, and whether
// its image is pinned.
func ServerLabel(e catalog.Entry) string {
	var notes []string
	for _, s := range e.Secrets {
		notes = append(notes, "secret "+s.Name)
	}
	if !e.Pinned() {
		notes = append(notes, "unpinned image")
	}
	if e.Type == "remote" {
		notes = append(notes, "remote")
	}
	if len(notes) == 0 {
		return e.Name
	}
	return e.Name + " (" + strings.Join(notes, ", ") + ")"
}
