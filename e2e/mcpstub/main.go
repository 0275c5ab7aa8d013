//go:build e2e

// Command mcpstub stands in for MCP infrastructure in the e2e tests, where no registry is
// reachable to pull docker/mcp-gateway or MCP server images.
//
//	mcpstub [gateway [run]] [docker/mcp-gateway flags]
//
// is a streamable-HTTP MCP server shaped like docker/mcp-gateway in a container: it listens on
// --port (default 8811), requires "Authorization: Bearer $MCP_GATEWAY_AUTH_TOKEN" on every path
// but GET /health (unless built open, see OpenEnv), accepts the real gateway's flags, and serves the tools of its built-in servers
// (echo: echo; math: add; whoami: whoami; secrets: secret_env; notes: note_read, note_search)
// narrowed by --servers and --tools as the real one narrows its catalog. secret_env returns what a spawned server would find in its
// environment given --catalog and --secrets. MCP sessions are stateful as in the real gateway:
// opened by initialize, closed only by DELETE. Every HTTP request, tool call and session opened
// or closed (with the number then open) is logged as a JSON line on stdout.
//
// A catalog server that --servers names, that has an image and is not built in, the stub
// spawns as the real gateway does: `docker run` through the docker CLI (which its spawning
// image, not the scratch one, carries) on the gateway container's own networks, one container
// per call, or one per server and MCP session with --long-lived or the catalog's longLived,
// capabilities refreshed on tools/list_changed (see pool). Each container started and closed,
// each refresh and the duration of each call are logged, so that tests can measure them;
// MCPSTUB_RELEASE_DEADLOCK=1 reproduces a bug of the real gateway (ReleaseDeadlockEnv).
//
//	mcpstub server [--chatty] [--list-delay D]
//
// is a stdio MCP server (tools echo and env), for catalogs that spawn a server container.
// --chatty makes it behave as the official server-everything does (runServer).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: mcpstub [gateway [run]] [flags] | mcpstub server [--chatty] [--list-delay D]")
		return 2
	}
	var err error
	switch {
	case strings.HasPrefix(args[0], "-"):
		// As the gateway image, whose entrypoint already names the mode: flags only.
		err = runGateway(ctx, args, stdout, stderr)
	case args[0] == "gateway":
		// "gateway run", as docker/mcp-gateway spells it, or just "gateway".
		if len(args) > 1 && args[1] == "run" {
			args = args[1:]
		}
		err = runGateway(ctx, args[1:], stdout, stderr)
	case args[0] == "server":
		var o serverOptions
		if o, err = parseServerFlags(args[1:], stderr); err == nil {
			err = runServer(ctx, o, stdin, stdout, stderr)
		}
	default:
		fmt.Fprintf(stderr, "mcpstub: unknown mode %q\n", args[0])
		return 2
	}
	if err != nil {
		fmt.Fprintln(stderr, "mcpstub: error:", err)
		return 1
	}
	return 0
}
