package watch

import (
	"path"
	"strings"
)

// The search matches every name of the workspace against the catalog's patterns; path.Match
// costs most of a snapshot of a large tree. A pattern is compiled once into what rejects most
// names without it: a pattern without a glob character is the name itself, one made by
// [anyCase] is the name in any case, and any other is tried only on names that start and end
// as its literal parts do.

// glob is a compiled path.Match pattern of one segment.
type glob struct {
	pattern        string
	exact, fold    string // the name it matches exactly, or in any case; "" when neither
	prefix, suffix string // the literal text before its first and after its last glob character
}

var globs = map[string]glob{}

func init() {
	for _, e := range catalog {
		for _, seg := range strings.Split(strings.Trim(e.Pattern, "/"), "/") {
			globs[seg] = compileGlob(seg)
		}
	}
	for _, m := range append(append([]string(nil), Markers...), inertHidden...) {
		globs[m] = compileGlob(m)
	}
}

func compileGlob(p string) glob {
	g := glob{pattern: p}
	i := strings.IndexAny(p, `*?[\`)
	if i < 0 {
		g.exact = p
		return g
	}
	if name, ok := anyCaseName(p); ok {
		g.fold = name
		return g
	}
	j := strings.LastIndexAny(p, `*?]\`)
	g.prefix, g.suffix = p[:i], p[j+1:]
	return g
}

// anyCaseName returns the name a pattern made by [anyCase] matches in any case.
func anyCaseName(p string) (string, bool) {
	var b strings.Builder
	for p != "" {
		if len(p) >= 4 && p[0] == '[' && p[3] == ']' && strings.ToLower(p[1:2]) == p[1:2] && strings.ToUpper(p[1:2]) == p[2:3] {
			b.WriteByte(p[1])
			p = p[4:]
			continue
		}
		if strings.ContainsAny(p[:1], `*?[\]`) {
			return "", false
		}
		b.WriteByte(p[0])
		p = p[1:]
	}
	return b.String(), true
}

// globMatch reports whether name matches the one-segment pattern p, as path.Match does.
func globMatch(p, name string) bool {
	g, ok := globs[p]
	switch {
	case !ok:
		m, _ := path.Match(p, name)
		return m
	case g.exact != "":
		return name == g.exact
	case g.fold != "":
		return strings.EqualFold(name, g.fold) && len(name) == len(g.fold)
	case !strings.HasPrefix(name, g.prefix) || !strings.HasSuffix(name, g.suffix):
		return false
	}
	m, _ := path.Match(p, name)
	return m
}
