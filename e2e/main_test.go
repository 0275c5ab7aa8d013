//go:build e2e

package e2e

import (
	"os"
	"testing"

	"github.com/aboxhq/abox/e2e/harness"
)

func TestMain(m *testing.M) { os.Exit(harness.Main(m)) }
