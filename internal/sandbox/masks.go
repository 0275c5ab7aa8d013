package sandbox

import (
	"io/fs"
	"path"
	"path/filepath"
	"strings"

	"github.com/aboxhq/abox/internal/render"
)

// MaxMaskWalk bounds how many workspace entries mask expansion visits.
const MaxMaskWalk = 200000

// Masks expands mask patterns against the workspace and returns a read-only mount for every
// existing match: the empty file over a file, the empty directory over a directory. Paths that
// do not exist are never mounted over, because Docker would create them in the host workspace.
//
// A pattern without a slash matches a name at any depth (".env*" masks sub/.env.local too); a
// pattern with a slash is anchored at the workspace root. A trailing slash matches directories
// only. Masked directories are not descended into.
func Masks(ws string, patterns []string, emptyFile, emptyDir string) (mounts []render.Mount, truncated bool) {
	type pat struct {
		glob     string
		anchored bool
		dirOnly  bool
	}
	var pats []pat
	for _, p := range patterns {
		dirOnly := strings.HasSuffix(p, "/")
		p = strings.Trim(p, "/")
		if p == "" {
			continue
		}
		pats = append(pats, pat{glob: p, anchored: strings.Contains(p, "/"), dirOnly: dirOnly})
	}
	visited := 0
	filepath.WalkDir(ws, func(full string, d fs.DirEntry, err error) error {
		if err != nil || full == ws {
			return nil
		}
		if visited++; visited > MaxMaskWalk {
			truncated = true
			return filepath.SkipAll
		}
		rel := filepath.ToSlash(strings.TrimPrefix(full, ws+string(filepath.Separator)))
		isDir := d.IsDir()
		if d.Type()&fs.ModeSymlink != 0 {
			return nil // a link's target is masked where it lives, if it is in the workspace
		}
		for _, p := range pats {
			if p.dirOnly && !isDir {
				continue
			}
			subject := path.Base(rel)
			if p.anchored {
				subject = rel
			}
			if ok, _ := path.Match(p.glob, subject); !ok {
				continue
			}
			src := emptyFile
			if isDir {
				src = emptyDir
			}
			mounts = append(mounts, render.Mount{Type: "bind", Source: src, Target: render.Workspace + "/" + rel, ReadOnly: true})
			if isDir {
				return filepath.SkipDir
			}
			return nil
		}
		return nil
	})
	return mounts, truncated
}
