// Package deps holds no code, only the tests that keep abox's shape from drifting unnoticed:
//
//   - layers_test.go checks every package's imports against the allowed edges of DESIGN §9
//     and STYLE §3.1, written out one edge and one reason at a time, so that a new edge is a
//     decision someone writes down, not an accident of a refactor;
//   - deps_test.go checks go.mod's direct requirements against direct.txt, where each one has a
//     reason, and the modules linked into the abox binary against binary.txt;
//   - docs_test.go checks that every package says why it exists, in doc.go when it has several
//     files.
//
// abox is a sandbox for a hostile agent and the same binary runs as netd inside every sandbox,
// so what it links is part of what it trusts: a dependency that arrives quietly with a refactor
// is code that runs next to the agent. restic enforces its layers with depguard and tailscale
// its dependencies with depaware; these tests are the same idea at abox's size, with nothing but
// the go command.
package deps
