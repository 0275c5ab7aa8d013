package watch_test

import (
	"testing"

	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/watch"
)

// TestCatalogCoversEveryToolchain: each toolchain abox knows (manifest.Toolchains) has a class
// of the catalog, its package managers' and build tools' files, and at least one of them is read
// at the top of every workspace package.
func TestCatalogCoversEveryToolchain(t *testing.T) {
	atPackage := map[string]bool{}
	for _, e := range watch.Catalog() {
		if e.Reach == watch.AtPackage {
			atPackage[e.Class] = true
		}
	}
	for _, tc := range manifest.Toolchains {
		if !atPackage[tc] {
			t.Errorf("toolchain %s has no catalog entry read at the top of a package", tc)
		}
	}
}
