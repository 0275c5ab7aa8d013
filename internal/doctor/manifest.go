package doctor

import (
	"context"
	"errors"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/aboxhq/abox/internal/approval"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/termtext"
)

// manifestSchema: agentbox.yaml decodes strictly, validates, and names a configured profile.
func manifestSchema(_ context.Context, e *Env) Finding {
	switch {
	case e.ManifestErr != nil:
		return failf("fix agentbox.yaml (unknown keys are refused), then run `abox render`",
			"%s", termtext.Line(e.ManifestErr.Error()))
	case e.ConfigErr != nil:
		return failf("fix config.yaml, then run `abox render`", "%s", termtext.Line(e.ConfigErr.Error()))
	case e.Manifest == nil || e.Config == nil:
		return skipf("run `abox init` in the project directory", "no manifest loaded")
	}
	if _, ok := e.Config.Profiles[e.Manifest.Profile]; !ok {
		return failf("add the profile under profiles: in config.yaml, or change profile: and run `abox up`",
			"profile %q is not configured", e.Manifest.Profile)
	}
	return okf("project %s, profile %s", e.Manifest.Project, e.Manifest.Profile)
}

// manifestApproved: the workspace manifest is the one the last `abox up` approved. The agent can
// write the workspace, so a changed manifest could widen its own next run; `abox run` refuses
// it, and this check shows the change.
func manifestApproved(_ context.Context, e *Env) Finding {
	if e.Manifest == nil {
		return skipf("fix agentbox.yaml first (see manifest.schema)", "the manifest did not load")
	}
	prev, err := e.approval()
	switch {
	case errors.Is(err, approval.ErrNotApproved):
		return failf("run `abox up`: it builds the sandbox and approves the manifest",
			"agentbox.yaml has not been approved by `abox up`")
	case err != nil: // corrupt: `abox run` refuses it (exit 3), and nothing is compared with it
		return failf("review agentbox.yaml; `abox up` approves it again (asking first)", "%s", termtext.Line(err.Error()))
	case prev.Same(e.Manifest):
		return okf("agentbox.yaml is the copy approved by `abox up`")
	}
	diff := prev.Diff(e.ManifestRaw)
	f := failf("review the change: `abox up` approves it (asking first when it widens the sandbox); until then `abox run` refuses",
		"agentbox.yaml changed since `abox up` approved it:\n%s", termtext.Text(strings.TrimRight(diff, "\n"))).with("diff", diff)
	if w := prev.Widening(e.Manifest); len(w) > 0 {
		f = f.with("widening", w)
	}
	return f
}

// serversDeclared: every declared server resolves in the catalog or custom-servers.yaml; the
// gateway itself would only log an unknown name and start without its tools.
func serversDeclared(_ context.Context, e *Env) Finding {
	if f, ok := e.needCatalog(); !ok {
		return f
	}
	var unknown []string
	for _, s := range e.Manifest.Servers {
		if _, ok := e.Catalog.Lookup(s); !ok {
			unknown = append(unknown, s)
		}
	}
	if len(unknown) > 0 {
		return failf("remove them from servers: in agentbox.yaml, or define them in custom-servers.yaml, then run `abox up`",
			"unknown MCP server(s): %s", strings.Join(unknown, ", ")).with("unknown", unknown)
	}
	return okf("%d server(s), %d remote", len(e.Manifest.Servers), len(e.Manifest.RemoteServers))
}

// serversPinned: every declared server's image is digest-pinned (remote servers, poci entries
// and custom pin: false images excepted), so a moved tag cannot change what runs.
func serversPinned(_ context.Context, e *Env) Finding {
	if f, ok := e.needCatalog(); !ok {
		return f
	}
	var unpinned []string
	for _, s := range e.Manifest.Servers {
		if entry, ok := e.Catalog.Lookup(s); ok && !entry.Pinned() {
			unpinned = append(unpinned, s+" ("+entry.Image+")")
		}
	}
	if len(unpinned) > 0 {
		return failf("pin the image as repo@sha256:<digest> (custom-servers.yaml, or an updated catalog), then run `abox up`",
			"not digest-pinned: %s", strings.Join(unpinned, ", ")).with("unpinned", unpinned)
	}
	return okf("%d image(s) pinned by digest", len(e.Manifest.Servers))
}

// serversNetwork: every server the manifest isolates with server_network: none is rendered with
// disableNetwork in the gateway catalog, which is the only switch the gateway honours.
func serversNetwork(_ context.Context, e *Env) Finding {
	if e.Manifest == nil {
		return skipf("fix agentbox.yaml first (see manifest.schema)", "the manifest did not load")
	}
	var isolated []string
	for _, s := range e.Manifest.Servers {
		if e.Manifest.ServerNetwork[s] == "none" {
			isolated = append(isolated, s)
		}
	}
	if len(isolated) == 0 {
		return okf("no server asks for --network none")
	}
	reg, err := e.renderedCatalog()
	if err != nil {
		return failf("run `abox render`", "reading the rendered catalog: %v", err)
	}
	var missing []string
	for _, s := range isolated {
		if dn, _ := reg[s]["disableNetwork"].(bool); !dn {
			missing = append(missing, s)
		}
	}
	if len(missing) > 0 {
		return failf("run `abox render`; a catalog server abox cannot shadow (no catalog entry) cannot be isolated: drop it or use a custom server with network: none",
			"server_network: none is not rendered for %s: they would run with network", strings.Join(missing, ", ")).with("missing", missing)
	}
	return okf("--network none rendered for %s", strings.Join(isolated, ", "))
}

// needCatalog returns a finding and false when the manifest or the catalog did not load.
func (e *Env) needCatalog() (Finding, bool) {
	switch {
	case e.Manifest == nil:
		return skipf("fix agentbox.yaml first (see manifest.schema)", "the manifest did not load"), false
	case e.ConfigErr != nil:
		return skipf("fix config.yaml first (see manifest.schema)", "config.yaml did not load"), false
	case e.Catalog == nil:
		detail := "the server catalog did not load"
		if e.CatalogErr != nil {
			detail += ": " + termtext.Line(e.CatalogErr.Error())
		}
		return failf("fix custom-servers.yaml or the Docker MCP catalog, then run `abox doctor` again", "%s", detail), false
	}
	return Finding{}, true
}

// renderedCatalog reads the catalog entries the project contributes to its gateway.
func (e *Env) renderedCatalog() (map[string]map[string]any, error) {
	data, err := e.artifactFile(render.CatalogFile)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Registry map[string]map[string]any `yaml:"registry"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	return doc.Registry, nil
}
