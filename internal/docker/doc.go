// Package docker runs the docker CLI for abox and decodes what it prints.
//
// # Why the CLI and not the socket
//
// abox drives the `docker` binary, never the Engine API socket. Every action abox takes on the
// machine is then one argv that a user can read in `--verbose` output ("+ docker network create
// …"), copy into a shell and run again, and that a test can record and compare. The argv is the
// audited artifact: runspec.json stores the literal `create …` argv of each container, and
// [Client.Create] runs exactly that argv. Driving the CLI also lets the CLI negotiate the API
// version with whatever daemon it meets (Docker Engine 20.10 speaks API 1.41 at most), and keeps
// the Docker Go SDK and its dependencies out of abox.
//
// # Layers
//
//   - [Runner] is the seam: one method that runs one invocation. [ExecRunner] runs the real binary;
//     the dockertest package provides a recording fake for unit tests and a fake `docker`
//     executable for testscript.
//   - [Client] wraps a Runner: it traces each argv, turns a non-zero exit into an [*ExitError],
//     and classifies well-known failures as [ErrNotFound] or [ErrDaemonUnreachable].
//   - Typed helpers on Client ([Client.ContainerInspect], [Client.Build], [Client.CopyFrom], …)
//     each build a small []string argv and decode the CLI's JSON output into the few fields abox
//     reads.
//
// # Secrets
//
// Secrets travel in [Invocation.Stdin] or in files of mode 0600, never in [Invocation.Args] and
// never in [Invocation.Env]: argv is visible to every user of the machine through /proc, is
// printed by `--verbose`, and is recorded by tests, which assert that no secret ever reaches it.
//
// # No shell
//
// Nothing in this package joins an argv into a string for a shell. The quoting in trace output is
// for readability only.
package docker
