package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/detect"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/statefs"
)

// initAnswers are the values init writes, from flags, the existing manifest, detection and, on a
// terminal, the picker.
type initAnswers struct {
	project, profile, permissionMode string
	servers, toolchains, egress      []string
	masks, context                   []string
	tools                            map[string][]string
}

// detectWorkspace returns the detected toolchains and the git remotes' allowlist entries.
func detectWorkspace(ws string) (toolchains, remotes []string) {
	return detect.Toolchains(ws), detect.GitRemotes(ws)
}

// suggestEgress returns the suggested hosts of each toolchain, from the host's own registry
// configuration ([detect.HostRegistries]).
func (a *App) suggestEgress(toolchains []string) map[string][]string {
	return detect.SuggestEgress(toolchains, detect.HostRegistries(context.Background(), a.probe()))
}

// defaults computes the answers without asking: existing values first, flags and detection added
// ([manifest.Propose]).
func (st *initState) defaults(o initOptions) initAnswers {
	m := manifest.Propose(st.existing, manifest.Proposal{
		Given: manifest.Manifest{Project: o.project, Profile: o.profile, Run: manifest.Run{PermissionMode: o.permissionMode},
			Servers: o.servers, Toolchains: o.toolchains, Egress: o.egress, Mounts: manifest.Mounts{Mask: o.masks}},
		Project: manifest.ProjectNameFor(st.ws), Profile: st.cfg.DefaultProfile(),
		Toolchains: st.toolchains, Suggested: st.suggested, Remotes: st.remotes,
	})
	return initAnswers{
		project: m.Project, profile: m.Profile, permissionMode: m.Run.PermissionMode,
		servers: m.Servers, toolchains: m.Toolchains, egress: m.Egress,
		masks: m.Mounts.Mask, context: m.Mounts.Context,
	}
}

// writeInit validates and renders everything first, then writes config.yaml (when new or
// changed), agentbox.yaml and the artifacts. Nothing is written if anything is invalid.
func (a *App) writeInit(st *initState, ans initAnswers) error {
	newProfile := ""
	if _, ok := st.cfg.Profiles[ans.profile]; !ok {
		st.cfg.Profiles[ans.profile] = config.Profile{Port: st.cfg.NextFreePort()}
		newProfile = ans.profile
		a.progressf("new profile %s (gateway port %d)", ans.profile, st.cfg.Profiles[ans.profile].Port)
	}
	doc, err := st.mergeDoc(ans)
	if err != nil {
		return err
	}
	m, err := doc.Manifest(manifest.FileName)
	if err != nil {
		return withHint(err, "fix the values given to `abox init`")
	}
	ps, err := a.Paths()
	if err != nil {
		return err
	}
	p := &project.Project{Workspace: st.ws, Manifest: m, Config: st.cfg, Custom: st.custom, Paths: ps, State: ps.Project(st.ws)}
	spec, err := a.spec(p)
	if err != nil {
		return err
	}
	spec.Catalog = st.cat
	if _, err := render.Render(spec); err != nil {
		return withHint(err, "fix config.yaml, then run `abox init` again")
	}
	if err := statefs.MkdirAll(st.ws); err != nil {
		return err
	}
	if !st.cfgExists || newProfile != "" {
		if err := a.writeConfig(st.cfg, newProfile); err != nil {
			return err
		}
	}
	unlock, err := p.Lock()
	if err != nil {
		return err
	}
	defer unlock()
	if err := statefs.WriteFile(filepath.Join(st.ws, manifest.FileName), doc.Bytes(), 0o644); err != nil {
		return err
	}
	if _, err := a.renderProject(p, false); err != nil {
		return err
	}
	a.initSummary(st, m)
	return nil
}

func (a *App) initSummary(st *initState, m *manifest.Manifest) {
	verb := "wrote"
	if st.existing != nil {
		verb = "updated"
	}
	fmt.Fprintf(a.Out, "%s %s (project %s, profile %s)\n", verb, filepath.Join(st.ws, manifest.FileName), m.Project, m.Profile)
	fmt.Fprintf(a.Out, "  servers: %s\n", listOrNone(m.DeclaredServers()))
	fmt.Fprintf(a.Out, "  toolchains: %s\n", listOrNone(m.Toolchains))
	fmt.Fprintf(a.Out, "  egress: %s (plus the Claude Code hosts abox always allows)\n", listOrNone(m.Egress))
	fmt.Fprintf(a.Out, "  permission mode: %s\n", m.Run.PermissionMode)
	fmt.Fprintf(a.Out, "next: `abox up` builds the images and records this manifest as approved\n")
}

// mergeDoc applies the answers to the existing document, keeping every other field and comment,
// or builds a new one.
func (st *initState) mergeDoc(ans initAnswers) (*manifest.Doc, error) {
	m := &manifest.Manifest{
		Version: manifest.Version, Project: ans.project, Profile: ans.profile,
		Servers: ans.servers, Tools: ans.tools, Toolchains: ans.toolchains, Egress: ans.egress,
		Mounts: manifest.Mounts{Mask: ans.masks, Context: ans.context},
		Run:    manifest.Run{PermissionMode: ans.permissionMode},
	}
	if st.doc == nil {
		return manifest.NewDoc(m)
	}
	if err := st.doc.Merge(m); err != nil {
		return nil, err
	}
	return st.doc, nil
}

func listOrNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ", ")
}
