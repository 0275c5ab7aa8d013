//go:build e2e

// Package harness runs abox's end-to-end tests against a real docker daemon.
//
// A test binary calls [Main] from TestMain: it prepares the machine once (e2e/setup.sh: host
// packages, dockerd, the offline base image) and removes what earlier, crashed runs left behind.
// Each test then calls [Setup], which gives it an isolated world:
//
//   - a docker network of its own, so tests never collide with each other or with a user's
//     abox-net, and a gateway profile name of its own;
//   - temporary ABOX_CONFIG_HOME, ABOX_STATE_HOME, HOME and workspace directories, with helpers
//     to write config.yaml ([Config]) and agentbox.yaml;
//   - [H.Abox] to run the abox binary in that environment;
//   - [H.StartServer] ("the internet": e2e/testsrv under --network-alias names, with
//     certificates from the test CA), [H.StartGateway] (the e2e/mcpstub gateway) and [H.Run]
//     for throwaway containers; [H.StartMessagesAPI] and [H.RealClaudeConfig] for the real
//     Claude Code, installed by abox from npm, against a stand-in of the Messages API;
//   - clean-up of everything labelled with the test's id, of every container on its network,
//     and of the volumes abox made for its workspace.
//
// Everything the harness creates carries the labels abox.test=<id> and abox.test.pid=<pid of
// the test binary>; [Main] sweeps resources whose test binary is gone. Set ABOX_E2E_KEEP=1 to
// keep a test's containers for debugging (the next run sweeps them).
//
// Images and binaries are built once per test binary and cached by content hash in the docker
// daemon and in e2e/.cache (or $ABOX_E2E_CACHE): the stand-in claude, testsrv and mcpstub as
// static binaries in FROM scratch images, the mcpstub gateway that spawns servers (base + the
// stub + the host's docker CLI), a client image (base + curl, dig, nc, the host's extra CA
// certificates and the test CA), and the abox binary itself ($ABOX_E2E_ABOX names a
// prebuilt one instead). A test that needs abox fails, never skips, when cmd/abox is missing.
package harness
