//go:build e2e

// Command standin is a stand-in for Claude Code's `claude` CLI, installed into agent images by
// abox (claude_code.source: file) in the e2e tests.
//
// The real agent is a model; the stand-in is the threat model's adversary made deterministic:
// in print mode (-p) it runs its prompt as a bash script in the current directory as the current
// user, and reports what happened in Claude Code's output formats (text, json, stream-json), so
// every attack a test wants to try is a prompt. It accepts Claude Code's flags and rejects
// unknown ones as the real CLI does, keeps sessions where the real CLI keeps them
// (~/.claude/projects/<cwd-slug>/<id>.jsonl) for --continue and --resume, connects to the MCP
// servers of --mcp-config to report their status, and emulates an unauthenticated CLI when
// STANDIN_REQUIRE_AUTH=1 and there are no credentials.
//
// The script talks back with lines on stdout:
//
//	::tool_use name=<tool> [input=<json object>]   reported as a tool_use item
//
// and sees STANDIN_SESSION_ID, STANDIN_PREV_SESSION (the resumed session, if any),
// STANDIN_SESSION_FILE, STANDIN_PERMISSION_MODE and STANDIN_SETTINGS (the --settings value) in
// its environment. --permission-mode is reported, not enforced: the script always runs.
//
// `claude mcp-call list|call|raw` is the stand-in's own MCP client, for tests; see mcpcall.go.
package main

import (
	"fmt"
	"io"
	"os"
)

// Version is what --version prints before " (Claude Code stand-in)".
const Version = "2.1.0"

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is the whole program; it returns the exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "mcp-call" {
		return mcpCall(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "net" {
		return netProbe(args[1:], stdout, stderr)
	}
	o, err := parseArgs(args)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	switch {
	case o.version:
		fmt.Fprintf(stdout, "%s (Claude Code stand-in)\n", Version)
		return 0
	case o.help:
		fmt.Fprint(stdout, usage)
		return 0
	case !o.print:
		fmt.Fprintln(stderr, "Error: the Claude Code stand-in has no interactive mode; use -p")
		return 1
	}
	if !o.hasPrompt {
		if b, err := io.ReadAll(stdin); err == nil && len(b) > 0 {
			o.prompt, o.hasPrompt = string(b), true
		}
	}
	if !o.hasPrompt {
		fmt.Fprintln(stderr, "Error: Input must be provided either through stdin or as a prompt argument when using --print")
		return 1
	}
	if o.outputFormat == "stream-json" && !o.verbose {
		fmt.Fprintln(stderr, "Error: When using --print, --output-format=stream-json requires --verbose")
		return 1
	}
	return printMode(o, stdout, stderr)
}

const usage = `Usage: claude [options] [command] [prompt]

Claude Code stand-in for abox's e2e tests: -p runs the prompt as a bash script.

Options:
  -p, --print                 print the response and exit
  --output-format <format>    text, json or stream-json (with --verbose)
  --verbose                   required by stream-json
  --permission-mode <mode>    acceptEdits, bypassPermissions, default, dontAsk, plan
  --mcp-config <configs...>   MCP server configuration files or JSON strings
  --strict-mcp-config         only use --mcp-config
  --settings <file-or-json>   settings
  -c, --continue              continue the latest session in this directory
  -r, --resume <id>           resume a session
  --model <model>             model name, reported in the init event
  -v, --version               print the version

Commands:
  mcp-call [--mcp-config P] [--server N] list | call <tool> [json] | raw <json-rpc>
`
