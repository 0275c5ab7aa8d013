package telemetry

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
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
// the result. It writes nothing for events it does not show.
func Pretty(w io.Writer, ev Event) {
	switch ev.Type {
	case "system":
		if ev.Subtype == "init" && ev.SessionID != "" {
			fmt.Fprintf(w, "session %s\n", ev.SessionID)
		}
	case "assistant":
		if ev.Message == nil {
			return
		}
		for _, c := range ev.Message.Content {
			switch c.Type {
			case "text":
				if t := strings.TrimRight(c.Text, "\n"); t != "" {
					fmt.Fprintln(w, t)
				}
			case "tool_use":
				fmt.Fprintf(w, "→ %s\n", c.Name)
			}
		}
	case "result":
		fmt.Fprintf(w, "result: %s\n", ev.Subtype)
	}
}
