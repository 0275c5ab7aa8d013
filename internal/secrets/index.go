package secrets

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/aboxhq/abox/internal/approval"
	"github.com/aboxhq/abox/internal/catalog"
	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/termtext"
)

// Use is one consumer of a secret in one registered project.
type Use struct {
	Need
	Project   string `json:"project"`
	Profile   string `json:"profile"`
	Workspace string `json:"workspace"`
	// Stale marks a use of a project abox could not read in full: its workspace manifest is gone
	// or broken (the use comes from its registry entry and approved manifest), or its approved
	// manifest is corrupt.
	Stale bool `json:"stale,omitempty"`
}

// StaleProject is a registered project (or a whole profile registry) abox could not read in
// full. Its known uses are still listed; what its lost manifest held may be missing.
type StaleProject struct {
	Project   string `json:"project"`
	Profile   string `json:"profile"`
	Workspace string `json:"workspace"`
	Reason    string `json:"reason"`
}

// Index is the reverse index: every use of every secret by every project abox has registered
// on any profile. A project abox has never seen cannot appear in it.
type Index struct {
	Uses  []Use          `json:"uses"`
	Stale []StaleProject `json:"stale"`
}

// UsesOf returns the uses of secret.
func (x *Index) UsesOf(secret string) []Use {
	var out []Use
	for _, u := range x.Uses {
		if u.Secret == secret {
			out = append(out, u)
		}
	}
	return out
}

// ServedAny reports whether a registered project hands any of names to a server or a remote
// server, through the gateway: a new value of it needs the gateway recreated. (An attached
// secret reaches the agent at its next run by itself.)
func (x *Index) ServedAny(names ...string) bool {
	for _, n := range names {
		for _, u := range x.UsesOf(n) {
			if u.Kind != UseEnv {
				return true
			}
		}
	}
	return false
}

// Secrets returns every secret some project uses, sorted.
func (x *Index) Secrets() []string {
	var needs []Need
	for _, u := range x.Uses {
		needs = append(needs, u.Need)
	}
	return Names(needs)
}

// BuildIndex reads every profile's registry under gateways/ and, for each bound project, the
// union of what its workspace manifest, its approved manifest and its registry entry require:
// the widest view, since the workspace copy may hold changes not yet approved and the approved
// copy is what runs. A project whose workspace manifest is gone or does not load is listed in
// Stale, never dropped, with the uses its registry entry and approved copy still show:
// an incomplete blast radius is worse than none.
func BuildIndex(ps paths.Paths, cat *catalog.Catalog) (*Index, error) {
	x := &Index{Uses: []Use{}, Stale: []StaleProject{}}
	profiles, err := gateway.Profiles(ps.GatewaysDir())
	if err != nil {
		return nil, err
	}
	for _, prof := range profiles {
		reg, err := gateway.LoadRegistry(ps.Gateway(prof), prof)
		if err != nil {
			x.Stale = append(x.Stale, StaleProject{Profile: prof, Reason: oneLine(err)})
			continue
		}
		for _, h := range reg.Hashes() {
			x.addProject(ps, prof, reg.Projects[h], cat)
		}
	}
	sort.SliceStable(x.Uses, func(i, j int) bool {
		a, b := x.Uses[i], x.Uses[j]
		if a.Secret != b.Secret {
			return a.Secret < b.Secret
		}
		return a.Project < b.Project
	})
	return x, nil
}

func (x *Index) addProject(ps paths.Paths, prof string, b gateway.Binding, cat *catalog.Catalog) {
	needs := bindingNeeds(b, cat)
	var why []string
	// A corrupt approval hides what runs: the project is stale, never taken as approving nothing.
	switch am, err := approval.Approved(ps.Project(b.Workspace)); {
	case err != nil:
		why = append(why, oneLine(err))
	case am != nil:
		needs = append(needs, Needs(am, cat)...)
	}
	m, _, err := manifest.Load(filepath.Join(b.Workspace, manifest.FileName))
	switch {
	case err == nil:
		needs = append(needs, Needs(m, cat)...)
	case errors.Is(err, manifest.ErrNotFound):
		why = append(why, fmt.Sprintf("%s is gone from %s: moved or deleted", manifest.FileName, b.Workspace))
	default:
		why = append(why, fmt.Sprintf("%s does not load: %s", manifest.FileName, oneLine(err)))
	}
	stale := strings.Join(why, "; ")
	if stale != "" {
		x.Stale = append(x.Stale, StaleProject{Project: b.Project, Profile: prof, Workspace: b.Workspace, Reason: stale})
	}
	for _, n := range sortNeeds(needs) {
		x.Uses = append(x.Uses, Use{Need: n, Project: b.Project, Profile: prof, Workspace: b.Workspace, Stale: stale != ""})
	}
}

func oneLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return termtext.Line(s)
}
