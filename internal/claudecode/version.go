package claudecode

import (
	"strconv"
	"strings"
)

// CompareVersions orders two exact versions major.minor.patch[-suffix] numerically; a suffix
// (a pre-release) sorts before the release itself.
func CompareVersions(a, b string) int {
	pa, sa := splitVersion(a)
	pb, sb := splitVersion(b)
	for i := range pa {
		if pa[i] != pb[i] {
			if pa[i] < pb[i] {
				return -1
			}
			return 1
		}
	}
	switch {
	case sa == sb:
		return 0
	case sa == "":
		return 1
	case sb == "":
		return -1
	}
	return strings.Compare(sa, sb)
}

func splitVersion(v string) ([3]int, string) {
	var out [3]int
	core, suffix := v, ""
	if i := strings.IndexAny(v, "+-"); i >= 0 {
		core, suffix = v[:i], v[i:]
	}
	for i, part := range strings.SplitN(core, ".", 3) {
		out[i], _ = strconv.Atoi(part)
	}
	return out, suffix
}
