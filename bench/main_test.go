//go:build bench && e2e

package bench

import (
	"flag"
	"os"
	"testing"

	"github.com/aboxhq/abox/e2e/harness"
)

// pairs is how many alternating pairs each figure takes (after one warm-up of each side).
var pairs = flag.Int("pairs", 7, "alternating pairs per figure")

func TestMain(m *testing.M) { os.Exit(harness.Main(m)) }

// TestBench sets up one world and measures every figure in it, in the order of BENCHMARKS.md.
// `-run TestBench/<name>` measures one figure (the world is always set up).
func TestBench(t *testing.T) {
	w := newWorld(t)
	t.Run("run-overhead", func(t *testing.T) { benchRunOverhead(t, w) })
	t.Run("spare", func(t *testing.T) { benchSpare(t, w) })
	t.Run("allowlist", func(t *testing.T) { benchAllowlist(t, w) })
	t.Run("egress", func(t *testing.T) { benchEgress(t, w) })
	t.Run("cli", func(t *testing.T) { benchCLI(t, w) })
	t.Run("runtime", func(t *testing.T) { benchRuntime(t, w) })
	t.Run("isolated", func(t *testing.T) { benchIsolated(t, w) })
	t.Run("caches", func(t *testing.T) { benchCaches(t, w) })
}
