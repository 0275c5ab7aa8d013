//go:build e2e

package main

import (
	"fmt"
	"slices"
	"strings"
)

// options are the Claude Code flags the stand-in understands.
type options struct {
	print, verbose, strictMCP, cont, version, help, forkSession bool
	outputFormat, permissionMode, model, resume, sessionID      string
	settings                                                    string
	mcpConfigs                                                  []string
	prompt                                                      string
	hasPrompt                                                   bool
}

// flagKind says how a flag takes its value, after commander.js, which Claude Code uses.
type flagKind int

const (
	boolean  flagKind = iota
	value             // --flag <v> or --flag=<v>
	variadic          // --flag <v...>: every following argument up to the next option
)

type flagSpec struct {
	long, short string
	kind        flagKind
	usage       string   // as in the real CLI's errors: "--model <model>"
	choices     []string // allowed values, if restricted
	set         func(o *options, v string)
}

// flagSpecs lists Claude Code's flags. Those the stand-in does not act on are accepted and
// ignored, as an unrecognised flag would make the real CLI exit.
var flagSpecs = []flagSpec{
	{"--print", "-p", boolean, "", nil, func(o *options, _ string) { o.print = true }},
	{"--verbose", "", boolean, "", nil, func(o *options, _ string) { o.verbose = true }},
	{"--version", "-v", boolean, "", nil, func(o *options, _ string) { o.version = true }},
	{"--help", "-h", boolean, "", nil, func(o *options, _ string) { o.help = true }},
	{"--continue", "-c", boolean, "", nil, func(o *options, _ string) { o.cont = true }},
	{"--strict-mcp-config", "", boolean, "", nil, func(o *options, _ string) { o.strictMCP = true }},
	{"--fork-session", "", boolean, "", nil, func(o *options, _ string) { o.forkSession = true }},
	{"--output-format", "", value, "--output-format <format>", []string{"text", "json", "stream-json"},
		func(o *options, v string) { o.outputFormat = v }},
	{"--permission-mode", "", value, "--permission-mode <mode>",
		[]string{"acceptEdits", "bypassPermissions", "default", "dontAsk", "plan"},
		func(o *options, v string) { o.permissionMode = v }},
	{"--mcp-config", "", variadic, "--mcp-config <configs...>", nil,
		func(o *options, v string) { o.mcpConfigs = append(o.mcpConfigs, v) }},
	{"--settings", "", value, "--settings <file-or-json>", nil, func(o *options, v string) { o.settings = v }},
	{"--resume", "-r", value, "--resume [value]", nil, func(o *options, v string) { o.resume = v }},
	{"--session-id", "", value, "--session-id <uuid>", nil, func(o *options, v string) { o.sessionID = v }},
	{"--model", "", value, "--model <model>", nil, func(o *options, v string) { o.model = v }},
	{"--dangerously-skip-permissions", "", boolean, "", nil, nil},
	{"--include-partial-messages", "", boolean, "", nil, nil},
	{"--debug", "-d", boolean, "", nil, nil},
	{"--input-format", "", value, "--input-format <format>", []string{"text", "stream-json"}, nil},
	{"--fallback-model", "", value, "--fallback-model <model>", nil, nil},
	{"--append-system-prompt", "", value, "--append-system-prompt <prompt>", nil, nil},
	{"--system-prompt", "", value, "--system-prompt <prompt>", nil, nil},
	{"--max-turns", "", value, "--max-turns <turns>", nil, nil},
	{"--setting-sources", "", value, "--setting-sources <sources>", nil, nil},
	{"--allowedTools", "", variadic, "--allowedTools <tools...>", nil, nil},
	{"--allowed-tools", "", variadic, "--allowed-tools <tools...>", nil, nil},
	{"--disallowedTools", "", variadic, "--disallowedTools <tools...>", nil, nil},
	{"--disallowed-tools", "", variadic, "--disallowed-tools <tools...>", nil, nil},
	{"--add-dir", "", variadic, "--add-dir <directories...>", nil, nil},
}

func lookupFlag(name string) (flagSpec, bool) {
	for _, f := range flagSpecs {
		if name == f.long || (f.short != "" && name == f.short) {
			return f, true
		}
	}
	return flagSpec{}, false
}

// parseArgs parses Claude Code's command line. Errors read like commander.js's.
func parseArgs(args []string) (options, error) {
	o := options{outputFormat: "text", permissionMode: "default"}
	var positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			positional = append(positional, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			positional = append(positional, a)
			continue
		}
		name, inline, hasInline := strings.Cut(a, "=")
		f, ok := lookupFlag(name)
		if !ok {
			return o, cliError("error: unknown option '%s'", a)
		}
		if f.kind == boolean {
			if hasInline {
				return o, cliError("error: unknown option '%s'", a)
			}
			apply(&o, f, "")
			continue
		}
		var vals []string
		switch {
		case hasInline:
			vals = []string{inline}
		case f.kind == value:
			if i+1 >= len(args) {
				return o, cliError("error: option '%s' argument missing", f.usage)
			}
			i++
			vals = []string{args[i]}
		default:
			for i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
				vals = append(vals, args[i])
			}
			if len(vals) == 0 {
				return o, cliError("error: option '%s' argument missing", f.usage)
			}
		}
		for _, v := range vals {
			if f.choices != nil && !slices.Contains(f.choices, v) {
				return o, cliError("error: option '%s' argument '%s' is invalid. Allowed choices are %s.",
					f.usage, v, strings.Join(f.choices, ", "))
			}
			apply(&o, f, v)
		}
	}
	switch len(positional) {
	case 0:
	case 1:
		o.prompt, o.hasPrompt = positional[0], true
	default:
		return o, cliError("error: too many arguments. Expected 1 argument but got %d.", len(positional))
	}
	return o, nil
}

// cliError formats a message in the real CLI's words; it is printed as is.
func cliError(format string, args ...any) error {
	return usageError(fmt.Sprintf(format, args...))
}

type usageError string

func (e usageError) Error() string { return string(e) }

func apply(o *options, f flagSpec, v string) {
	if f.set != nil {
		f.set(o, v)
	}
}
