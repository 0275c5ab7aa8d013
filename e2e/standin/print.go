//go:build e2e

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// builtinTools are the tools Claude Code reports in its init event.
var builtinTools = []string{"Task", "Bash", "Glob", "Grep", "LS", "Read", "Edit", "MultiEdit", "Write",
	"NotebookEdit", "WebFetch", "TodoWrite", "WebSearch", "BashOutput", "KillShell"}

const (
	defaultModel = "claude-sonnet-4-5-20250929"
	// loginMessage is what an unauthenticated Claude Code answers to every prompt.
	loginMessage = "Invalid API key · Please run /login"
	toolUseLine  = "::tool_use "
)

// printMode runs the prompt as a bash script and reports it in o.outputFormat.
func printMode(o options, stdout, stderr io.Writer) int {
	start := time.Now()
	cwd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(stderr, "Error:", err)
		return 1
	}
	servers, err := loadMCPConfigs(o.mcpConfigs)
	if err != nil {
		fmt.Fprintln(stderr, "Error:", err)
		return 1
	}
	sess, err := openSession(o, cwd)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	e := &emitter{format: o.outputFormat, w: stdout, sess: sess, cwd: cwd, model: o.model}
	if e.model == "" {
		e.model = defaultModel
	}
	statuses, mcpTools := probeMCP(servers)
	e.emit(map[string]any{
		"type": "system", "subtype": "init", "cwd": cwd, "session_id": sess.ID,
		"tools": append(append([]string{}, builtinTools...), mcpTools...), "mcp_servers": nonNil(statuses),
		"model": e.model, "permissionMode": o.permissionMode, "apiKeySource": apiKeySource(),
		"claude_code_version": Version, "output_style": "default", "slash_commands": []string{},
		"uuid": newUUID(),
	})
	_ = sess.record(cwd, "user", map[string]any{"role": "user", "content": o.prompt})
	if os.Getenv("STANDIN_REQUIRE_AUTH") == "1" && !authenticated() {
		e.assistant([]any{textItem(loginMessage)})
		return e.result(start, 1, "success", loginMessage)
	}
	code, text := runScript(o, cwd, sess, e, stderr)
	e.assistant([]any{textItem(text)})
	subtype := "success"
	if code != 0 {
		subtype = "error_during_execution"
	}
	return e.result(start, code, subtype, text)
}

func nonNil(s []mcpStatus) []mcpStatus {
	if s == nil {
		return []mcpStatus{}
	}
	return s
}

func apiKeySource() string {
	if os.Getenv("ANTHROPIC_API_KEY") != "" {
		return "ANTHROPIC_API_KEY"
	}
	return "none"
}

func textItem(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

// emitter writes events in the chosen output format and keeps the session transcript.
type emitter struct {
	format string
	w      io.Writer
	sess   session
	cwd    string
	model  string
}

// emit writes one stream-json line; the other formats only print the result.
func (e *emitter) emit(ev map[string]any) {
	if e.format != "stream-json" {
		return
	}
	b, _ := json.Marshal(ev)
	fmt.Fprintf(e.w, "%s\n", b)
}

func (e *emitter) assistant(content []any) {
	msg := map[string]any{
		"id": "msg_standin_" + newUUID()[:8], "type": "message", "role": "assistant", "model": e.model,
		"content": content, "stop_reason": nil, "usage": map[string]int{"input_tokens": 0, "output_tokens": 0},
	}
	_ = e.sess.record(e.cwd, "assistant", msg)
	e.emit(map[string]any{"type": "assistant", "message": msg, "parent_tool_use_id": nil,
		"session_id": e.sess.ID, "uuid": newUUID()})
}

// toolUse reports a tool call the script announced, and its (stand-in) result.
func (e *emitter) toolUse(name string, input json.RawMessage) {
	id := "toolu_standin_" + newUUID()[:8]
	e.assistant([]any{map[string]any{"type": "tool_use", "id": id, "name": name, "input": input}})
	msg := map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "tool_result", "tool_use_id": id, "content": "ok"}}}
	_ = e.sess.record(e.cwd, "user", msg)
	e.emit(map[string]any{"type": "user", "message": msg, "parent_tool_use_id": nil,
		"session_id": e.sess.ID, "uuid": newUUID()})
}

// result reports the end of the run and returns code, the exit code.
func (e *emitter) result(start time.Time, code int, subtype, text string) int {
	ev := map[string]any{
		"type": "result", "subtype": subtype, "is_error": code != 0,
		"duration_ms": time.Since(start).Milliseconds(), "duration_api_ms": 0, "num_turns": 1,
		"result": text, "session_id": e.sess.ID, "total_cost_usd": 0,
		"usage":              map[string]int{"input_tokens": 0, "output_tokens": 0},
		"permission_denials": []any{}, "uuid": newUUID(),
	}
	switch e.format {
	case "stream-json":
		e.emit(ev)
	case "json":
		b, _ := json.Marshal(ev)
		fmt.Fprintf(e.w, "%s\n", b)
	default:
		fmt.Fprintln(e.w, text)
	}
	return code
}

// runScript runs the prompt with bash in cwd, forwarding its stderr and turning ::tool_use lines of
// its stdout into events. It returns the exit code and the rest of stdout.
func runScript(o options, cwd string, sess session, e *emitter, stderr io.Writer) (int, string) {
	cmd := exec.Command("/bin/bash", "-c", o.prompt)
	cmd.Dir = cwd
	cmd.Env = append(os.Environ(), "STANDIN_SESSION_ID="+sess.ID, "STANDIN_PREV_SESSION="+sess.Prev,
		"STANDIN_SESSION_FILE="+sess.File, "STANDIN_PERMISSION_MODE="+o.permissionMode,
		"STANDIN_SETTINGS="+o.settings)
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(stderr, "Error:", err)
		return 1, ""
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(stderr, "Error:", err)
		return 127, ""
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	var text bytes.Buffer
	r := bufio.NewReader(out)
	for {
		line, err := r.ReadString('\n')
		if name, input, ok := parseToolUse(line); ok {
			e.toolUse(name, input)
		} else {
			text.WriteString(line)
		}
		if err != nil {
			break
		}
	}
	return exitCode(cmd.Wait()), strings.TrimSuffix(text.String(), "\n")
}

// parseToolUse parses "::tool_use name=<tool> [input=<json>]".
func parseToolUse(line string) (string, json.RawMessage, bool) {
	rest, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), toolUseLine)
	if !ok {
		return "", nil, false
	}
	nameField, inputField, _ := strings.Cut(strings.TrimSpace(rest), " ")
	name, ok := strings.CutPrefix(nameField, "name=")
	if !ok || name == "" {
		return "", nil, false
	}
	input := json.RawMessage(`{}`)
	if v, ok := strings.CutPrefix(strings.TrimSpace(inputField), "input="); ok && json.Valid([]byte(v)) {
		input = json.RawMessage(v)
	}
	return name, input, true
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return 1
}
