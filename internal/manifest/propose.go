package manifest

import (
	"cmp"
	"slices"
)

// Proposal is what `abox init` starts from besides the existing manifest: the values given
// as flags, the fallbacks for the names, and what it detected in the workspace.
type Proposal struct {
	// Given holds the flags: Project, Profile and Run.PermissionMode override; Servers,
	// Toolchains, Egress and Mounts.Mask add to what the manifest has.
	Given Manifest
	// Project and Profile are the names to use when neither a flag nor the manifest has one.
	Project, Profile string
	// Toolchains are the detected toolchains; Suggested the egress entries each needs.
	Toolchains []string
	Suggested  map[string][]string
	// Remotes are the git remotes' entries, proposed for a new manifest only.
	Remotes []string
}

// Propose returns what init writes without asking: the existing manifest's values first (nil
// for a new one), the flags and detection added. A toolchain the manifest already has brings
// no suggestions (the user has decided its egress), and nothing in egress_ignored is proposed
// again. Tools and every field init does not ask about are left empty: [Doc.Merge] keeps the
// document's.
func Propose(existing *Manifest, p Proposal) *Manifest {
	ex := existing
	if ex == nil {
		ex = &Manifest{}
	}
	g := p.Given
	out := &Manifest{
		Version:    Version,
		Project:    cmp.Or(g.Project, ex.Project, p.Project),
		Profile:    cmp.Or(g.Profile, ex.Profile, p.Profile),
		Run:        Run{PermissionMode: cmp.Or(g.Run.PermissionMode, ex.Run.PermissionMode, ModeDefault)},
		Servers:    Union(ex.Servers, g.Servers),
		Toolchains: Union(ex.Toolchains, g.Toolchains, p.Toolchains),
		Mounts:     Mounts{Mask: Union(ex.Mounts.Mask, g.Mounts.Mask), Context: ex.Mounts.Context},
	}
	var suggested []string
	for _, t := range out.Toolchains {
		if !slices.Contains(ex.Toolchains, t) {
			suggested = append(suggested, p.Suggested[t]...)
		}
	}
	if existing == nil {
		suggested = append(suggested, p.Remotes...)
	}
	suggested = slices.DeleteFunc(suggested, func(h string) bool { return slices.Contains(ex.EgressIgnored, h) })
	out.Egress = Union(ex.Egress, g.Egress, suggested)
	return out
}
