package telemetry

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/aboxhq/abox/internal/termtext"
)

// Event is the part of a Claude Code stream-json line abox reads.
type Event struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	SessionID string `json:"session_id"`
	Message   *struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
			Name string `json:"name"`
		} `json:"content"`
	} `json:"message"`
	Result  string `json:"result"`
	IsError bool   `json:"is_error"`
}

// Summary is what a transcript says about a run.
type Summary struct {
	SessionID string
	ToolCalls []string
	Result    string // the result event's subtype
	IsError   bool
	LastText  string
}

// Observe updates the summary with one transcript line; lines that are not JSON (truncated,
// or plain text output) are ignored.
func (s *Summary) Observe(line []byte) (Event, bool) {
	var ev Event
	if json.Unmarshal(line, &ev) != nil {
		return ev, false
	}
	if s.SessionID == "" && ev.SessionID != "" {
		s.SessionID = ev.SessionID
	}
	if ev.Message != nil {
		for _, c := range ev.Message.Content {
			switch c.Type {
			case "tool_use":
				s.ToolCalls = append(s.ToolCalls, c.Name)
			case "text":
				s.LastText = c.Text
			}
		}
	}
	if ev.Type == "result" {
		s.Result, s.IsError = ev.Subtype, ev.IsError
		if ev.Result != "" {
			s.LastText = ev.Result
		}
	}
	return ev, true
}

// ReadSummary summarises a whole transcript.
func ReadSummary(r io.Reader) Summary {
	var s Summary
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		s.Observe(sc.Bytes())
	}
	return s
}

// Pretty writes the human form of one event: the session, assistant text, "→ tool" lines and
// the result. It writes nothing for events it does not show. Every field comes from the agent,
// so it is escaped: text with [termtext.Text] (its lines stay lines), the rest with
// [termtext.Line].
func Pretty(w io.Writer, ev Event) {
	switch ev.Type {
	case "system":
		if ev.Subtype == "init" && ev.SessionID != "" {
			fmt.Fprintf(w, "session %s\n", termtext.Line(ev.SessionID))
		}
	case "assistant":
		if ev.Message == nil {
			return
		}
		for _, c := range ev.Message.Content {
			switch c.Type {
			case "text":
				if t := strings.TrimRight(c.Text, "\n"); t != "" {
					fmt.Fprintln(w, termtext.Text(t))
				}
			case "tool_use":
				fmt.Fprintf(w, "→ %s\n", termtext.Line(c.Name))
			}
		}
	case "result":
		fmt.Fprintf(w, "result: %s\n", termtext.Line(ev.Subtype))
	}
}

// PrettyText writes a line of the agent's output that is not a stream-json event, escaped with
// [termtext.Text]: whatever the agent prints reaches the terminal visible, never as a control
// sequence.
func PrettyText(w io.Writer, line []byte) {
	fmt.Fprintln(w, termtext.Text(string(line)))
}
