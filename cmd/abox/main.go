// Command abox gives every project a disposable sandbox in which a Claude Code agent runs
// headless, treated as hostile. See `abox --help`.
package main

import (
	"os"

	"github.com/aboxhq/abox/internal/cli"
)

func main() { os.Exit(cli.Main()) }
