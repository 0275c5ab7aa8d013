package sandbox

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// Links: what a masked name that is a symlink leads to, and every other hard link of masked
// content, are masked too; see the package doc's "Follow content".

// maskTargets masks what each symlink a pattern matched leads to in the workspace: .env as a
// link to config/app.env must not leave the agent the content through the link, while the
// target's own name matches no pattern. A link that leads out of the workspace, or nowhere, has
// nothing in it to mask (the agent's container has no host path but its mounts).
//
// A literal mask path the walk did not reach through real directories (config/master.key, with
// config a link to shared/config) is resolved the same way.
//
// A link to the workspace itself leads to nothing masked and is left alone; one to a directory
// that holds other masks is refused, as the mounts would nest in a read-only empty directory.
func (w *walker) maskTargets(ws string) error {
	realWS, err := filepath.EvalSymlinks(ws)
	if err != nil {
		return nil
	}
	var dirs []Mask
	for _, p := range w.pats {
		if p.literal() && !w.present[p.glob] {
			// not reached through real directories: config/master.key with config a link
			w.linked = append(w.linked, Mask{Path: p.glob, Pattern: p.raw})
		}
	}
	for _, l := range w.linked {
		target, err := filepath.EvalSymlinks(filepath.Join(ws, filepath.FromSlash(l.Path)))
		if err != nil {
			continue
		}
		rel, err := filepath.Rel(realWS, target)
		if err != nil || !filepath.IsLocal(rel) || rel == "." {
			continue
		}
		rel = filepath.ToSlash(rel)
		var st unix.Stat_t
		if unix.Lstat(target, &st) != nil {
			continue
		}
		id := FileID{Dev: uint64(st.Dev), Ino: uint64(st.Ino)}
		if w.masks[id].has(rel) || w.covered(rel) {
			continue
		}
		m := Mask{Path: rel, Dir: st.Mode&unix.S_IFMT == unix.S_IFDIR, ID: id, Reason: ByTarget, Pattern: l.Pattern, Origin: l.Path}
		w.add(id, m)
		if m.Dir {
			dirs = append(dirs, m)
		}
	}
	for _, d := range dirs {
		for _, obj := range w.masks {
			for _, m := range obj.paths {
				if strings.HasPrefix(m.Path, d.Path+"/") {
					return maskErr(fmt.Sprintf("remove the symlink %s, or mask %s itself in mounts.mask", shellQuote(d.Origin), shellQuote(d.Path)),
						"masked %s leads to the directory %s, which holds masked %s: abox cannot mount both",
						printable(d.Origin), printable(d.Path), printable(m.Path))
				}
			}
		}
	}
	return nil
}

// followLinks masks every other link of masked content, and of files in masked directories,
// and refuses content with links outside the workspace: abox cannot show that the agent has
// no way to them (a context mount, another project's workspace).
func (w *walker) followLinks() error {
	ids := make([]FileID, 0, len(w.links))
	for id := range w.links {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return w.links[ids[i]][0].rel < w.links[ids[j]][0].rel })
	for _, id := range ids {
		if err := w.followLink(id, w.links[id]); err != nil {
			return err
		}
	}
	return nil
}

func (w *walker) followLink(id FileID, paths []linkPath) error {
	obj := w.masks[id]
	cover := ""
	for _, p := range paths {
		if p.cover != "" {
			cover = p.cover
			break
		}
	}
	if obj == nil && cover == "" {
		return nil // not masked content
	}
	origin, pat := "", cover
	if obj != nil {
		origin, pat = obj.origin, obj.pattern
	} else {
		for _, p := range paths {
			if p.cover != "" {
				origin = p.rel
				break
			}
		}
	}
	if n := w.nlink[id]; uint64(len(paths)) < n {
		q := shellQuote(origin)
		return maskErr(fmt.Sprintf("give it a single link: `cp -p %s %s.tmp && mv %s.tmp %s`, or remove its other links", q, q, q, q),
			"masked %s has %d hard links but only %d are in the workspace; abox cannot show that the agent has no way to the others",
			printable(origin), n, len(paths))
	}
	for _, p := range paths {
		if p.cover != "" || obj.has(p.rel) {
			continue
		}
		w.add(id, Mask{Path: p.rel, ID: id, Reason: ByLink, Pattern: pat, Origin: origin})
		obj = w.masks[id]
	}
	return nil
}

// links marks every path of the content but one as a link of it: the one a pattern matched,
// else the first.
func (o *maskObj) links() {
	main := 0
	for i, m := range o.paths {
		if m.Reason == ByPattern {
			main = i
			break
		}
	}
	for i := range o.paths {
		if i != main && o.paths[i].Reason != ByPattern {
			o.paths[i].Reason, o.paths[i].Origin = ByLink, o.paths[main].Path
		}
	}
}

func (o *maskObj) has(rel string) bool {
	if o == nil {
		return false
	}
	for _, m := range o.paths {
		if m.Path == rel {
			return true
		}
	}
	return false
}
