//go:build e2e

package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// A script is what the conversation's answers will be, written in the prompt, one directive a
// line (other lines are ignored):
//
//	bash: <command>            a Bash tool use running the command
//	mcp: <tool> <json>         a ToolSearch tool use selecting the MCP tool (Claude Code defers
//	                           MCP tool schemas and loads them on demand), then the tool use
//	search: <query>            a ToolSearch tool use with this query alone
//	say: <text>                the final answer's first line (default "done")
//	fail: <message>            answer with a 400 invalid_request_error instead
//
// The answer to a request is picked by reading it: the number of tool results after the last
// prompt is the number of steps done, so the next step follows, and after the last one the
// final answer, which says the text and quotes every tool result ("[<tool>] <result>"), so the
// client's output shows what reached the model. A retried or repeated request gets the same
// answer; nothing depends on how many requests came before.
type script struct {
	steps []step
	say   string
	fail  string
}

// step is one tool use.
type step struct {
	tool  string
	input json.RawMessage
}

func parseScript(prompt string) script {
	var s script
	for _, line := range strings.Split(prompt, "\n") {
		key, val, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		val = strings.TrimSpace(val)
		switch key {
		case "bash":
			in, _ := json.Marshal(map[string]string{"command": val, "description": "Run the scripted command"})
			s.steps = append(s.steps, step{tool: "Bash", input: in})
		case "mcp":
			name, args, _ := strings.Cut(val, " ")
			if args = strings.TrimSpace(args); args == "" || !json.Valid([]byte(args)) {
				args = "{}"
			}
			sel, _ := json.Marshal(map[string]any{"query": "select:" + name, "max_results": 1})
			s.steps = append(s.steps, step{tool: "ToolSearch", input: sel}, step{tool: name, input: json.RawMessage(args)})
		case "search":
			in, _ := json.Marshal(map[string]any{"query": val, "max_results": 5})
			s.steps = append(s.steps, step{tool: "ToolSearch", input: in})
		case "say":
			s.say = val
		case "fail":
			s.fail = val
		}
	}
	return s
}

// request is the part of a Messages request the stand-in reads.
type request struct {
	Model    string       `json:"model"`
	Stream   bool         `json:"stream"`
	Messages []inMessage  `json:"messages"`
	Tools    []namedEntry `json:"tools"`
}

type namedEntry struct {
	Name string `json:"name"`
}

type inMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"` // a string or a list of blocks
}

// inBlock is a content block of a request message.
type inBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	ToolName  string          `json:"tool_name"` // tool_reference
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"` // tool_result: a string or a list of blocks
	IsError   bool            `json:"is_error"`
}

// blocks returns a message's content as blocks; a plain string is one text block.
func (m inMessage) blocks() []inBlock {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return []inBlock{{Type: "text", Text: s}}
	}
	var b []inBlock
	json.Unmarshal(m.Content, &b)
	return b
}

// text returns a tool result's text.
func (b inBlock) resultText() string {
	var s string
	if json.Unmarshal(b.Content, &s) == nil {
		return s
	}
	var parts []inBlock
	json.Unmarshal(b.Content, &parts)
	var out []string
	for _, p := range parts {
		switch p.Type {
		case "text":
			out = append(out, p.Text)
		case "tool_reference":
			out = append(out, "tool_reference:"+p.ToolName)
		default:
			out = append(out, p.Type)
		}
	}
	return strings.Join(out, "\n")
}

// conversation reports whether r is a turn of the scripted conversation: it offers Bash and its
// last prompt is a script. Older clients also send subagents' warm-up requests with tools.
func (r request) conversation() bool {
	if !r.offers("Bash") {
		return false
	}
	prompt, _ := r.progress()
	s := parseScript(prompt)
	return len(s.steps) > 0 || s.say != "" || s.fail != ""
}

func (r request) offers(tool string) bool {
	for _, t := range r.Tools {
		if t.Name == tool {
			return true
		}
	}
	return false
}

// answer is what the stand-in replies: content blocks, or an API error.
type answer struct {
	blocks              []outBlock
	status              int
	errType, errMessage string
}

func (a answer) summary() string {
	var parts []string
	for _, b := range a.blocks {
		if b.Type == "tool_use" {
			parts = append(parts, "tool_use:"+b.Name)
		} else {
			parts = append(parts, b.Type)
		}
	}
	return strings.Join(parts, ",")
}

// result is a tool result after the prompt, with the name of the tool that produced it.
type result struct {
	tool, text string
	isError    bool
}

// next picks the answer to a conversation request from its messages.
func (r request) next() answer {
	prompt, results := r.progress()
	s := parseScript(prompt)
	if s.fail != "" {
		return answer{status: http.StatusBadRequest, errType: "invalid_request_error", errMessage: s.fail}
	}
	if n := len(results); n < len(s.steps) {
		st := s.steps[n]
		return answer{blocks: []outBlock{
			{Type: "text", Text: fmt.Sprintf("Step %d of %d: %s.", n+1, len(s.steps), st.tool)},
			{Type: "tool_use", ID: "toolu_" + randomID(), Name: st.tool, Input: st.input},
		}}
	}
	say := s.say
	if say == "" {
		say = "done"
	}
	lines := []string{say}
	for _, res := range results {
		text := res.text
		if len(text) > 2000 {
			text = text[:2000] + "…"
		}
		mark := ""
		if res.isError {
			mark = " (error)"
		}
		lines = append(lines, fmt.Sprintf("[%s]%s %s", res.tool, mark, text))
	}
	return answer{blocks: []outBlock{{Type: "text", Text: strings.Join(lines, "\n")}}}
}

// progress returns the text of the last prompt (the last user message with text and no tool
// result) and the tool results that came after it, in order.
func (r request) progress() (string, []result) {
	names := map[string]string{}
	start := 0
	var prompt string
	for i := len(r.Messages) - 1; i >= 0; i-- {
		m := r.Messages[i]
		if m.Role != "user" {
			continue
		}
		var texts []string
		hasResult := false
		for _, b := range m.blocks() {
			switch b.Type {
			case "tool_result":
				hasResult = true
			case "text":
				texts = append(texts, b.Text)
			}
		}
		if !hasResult && len(texts) > 0 {
			prompt, start = strings.Join(texts, "\n"), i+1
			break
		}
	}
	var results []result
	for _, m := range r.Messages[start:] {
		for _, b := range m.blocks() {
			switch {
			case m.Role == "assistant" && b.Type == "tool_use":
				names[b.ID] = b.Name
			case m.Role == "user" && b.Type == "tool_result":
				results = append(results, result{tool: names[b.ToolUseID], text: b.resultText(), isError: b.IsError})
			}
		}
	}
	return prompt, results
}
