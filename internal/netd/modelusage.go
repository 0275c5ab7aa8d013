package netd

import (
	"bytes"
	"encoding/json"
	"mime"
)

// The model forwarder's accounting: what a Messages response says it cost, read as the response
// streams through to the agent (modelapi.go), for [policy.ModelRecord].

// apiUsage is the usage object of a Messages response.
type apiUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
}

// usageReader watches a response go by and keeps its model and usage: from a stream, the
// message_start event (model, input tokens) and the last message_delta (output tokens); from a
// JSON body, its model and usage. It never changes or holds up what it sees.
type usageReader struct {
	stream bool
	line   []byte // the stream's current line; nil while a line over maxUsageLine is skipped
	skip   bool
	body   bytes.Buffer
	model  string
	usage  apiUsage
	// started and stopped: the stream's message_start and message_stop were seen. A stream
	// that started and ended without its message_stop was cut, wherever it ended.
	started, stopped bool
	parsed           bool // a non-streamed body was read whole, with its usage
}

func newUsageReader(contentType string) *usageReader {
	mt, _, _ := mime.ParseMediaType(contentType)
	return &usageReader{stream: mt == "text/event-stream"}
}

// Write implements io.Writer for the TeeReader; it never fails.
func (u *usageReader) Write(p []byte) (int, error) {
	if !u.stream {
		if u.body.Len()+len(p) <= maxUsageJSON {
			u.body.Write(p)
		}
		return len(p), nil
	}
	for _, b := range p {
		if b == '\n' {
			if !u.skip {
				u.event(u.line)
			}
			u.line, u.skip = u.line[:0], false
			continue
		}
		if u.skip {
			continue
		}
		if len(u.line) >= maxUsageLine {
			u.skip = true
			continue
		}
		u.line = append(u.line, b)
	}
	return len(p), nil
}

// event reads one line of the stream; only data lines of the two events that carry usage count.
func (u *usageReader) event(line []byte) {
	data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r"), []byte("data:"))
	if !ok {
		return
	}
	var ev struct {
		Type    string `json:"type"`
		Message struct {
			Model string   `json:"model"`
			Usage apiUsage `json:"usage"`
		} `json:"message"`
		Usage *apiUsage `json:"usage"`
	}
	if json.Unmarshal(bytes.TrimSpace(data), &ev) != nil {
		return
	}
	switch ev.Type {
	case "message_start":
		u.started = true
		u.model = logText(ev.Message.Model, 100)
		u.usage = ev.Message.Usage
	case "message_stop":
		u.stopped = true
	case "message_delta":
		if ev.Usage != nil {
			// The delta's counts are cumulative; input counts appear only when the API sends them.
			u.usage.OutputTokens = ev.Usage.OutputTokens
			if ev.Usage.InputTokens > 0 {
				u.usage.InputTokens = ev.Usage.InputTokens
			}
		}
	}
}

// cut reports whether a stream began and ended before its message_stop.
func (u *usageReader) cut() bool { return u.stream && u.started && !u.stopped }

// seen reports whether the response's usage went by: a stream's message_start, or a
// non-streamed body read whole.
func (u *usageReader) seen() bool {
	if u.stream {
		return u.started
	}
	return u.parsed
}

// finish reads a non-streamed body once it is complete.
func (u *usageReader) finish() {
	if u.stream {
		if !u.skip && len(u.line) > 0 {
			u.event(u.line)
		}
		return
	}
	var resp struct {
		Model string   `json:"model"`
		Usage apiUsage `json:"usage"`
	}
	if json.Unmarshal(u.body.Bytes(), &resp) == nil {
		u.model, u.usage, u.parsed = logText(resp.Model, 100), resp.Usage, true
	}
}
