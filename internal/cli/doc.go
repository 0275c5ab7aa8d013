// Package cli is abox's command tree: one file per command group, each command built by a
// constructor that fills an options struct and calls a run function with the [App].
//
// Only this package prints to the user (exit.go prints every error in abox's one shape). Lower
// packages return errors and sentinels; [remedy] gives each its exit status and the hint that
// names the abox command that fixes it.
//
// It is the one package that may import all the others (internal/deps checks the layering), so
// it is where logic lands by default; keep a command to flags, one call into the package that
// owns the concept, and output, so that doctor, netd and the tests reach the same rule without
// going through a terminal.
package cli
