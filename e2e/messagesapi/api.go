//go:build e2e

package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// maxBody bounds a request body; Claude Code's first request (system prompt, every tool's
// schema) is well under a megabyte.
const maxBody = 16 << 20

// api is the HTTP handler.
type api struct {
	log      *slog.Logger
	requests *requestLog
}

// record is one line of the request log.
type record struct {
	Time    time.Time         `json:"time"`
	Method  string            `json:"method"`
	Path    string            `json:"path"`
	Headers map[string]string `json:"headers"`
	Kind    string            `json:"kind"`   // conversation, side, count_tokens or other
	Answer  string            `json:"answer"` // text, tool_use:<name>, error:<type> …
	Status  int               `json:"status"`
	Body    json.RawMessage   `json:"body,omitempty"` // the request body as sent, when it is JSON
	// Fetched are the URL sources the stand-in fetched, as the API's servers do, with the
	// status or error of each.
	Fetched []string `json:"fetched,omitempty"`
}

// requestLog appends records to a file, one JSON line each.
type requestLog struct {
	mu sync.Mutex
	f  *os.File
}

func openRequestLog(path string) (*requestLog, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &requestLog{f: f}, nil
}

func (l *requestLog) write(r record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err = l.f.Write(append(b, '\n'))
	return err
}

func (l *requestLog) close() { l.f.Close() }

// secretHeaders are replaced in the log by [Fingerprint] of their value: the key is a dummy, but
// a log that copies credentials is a bad habit to teach, and a test still learns which
// credential arrived by comparing fingerprints.
var secretHeaders = map[string]bool{"x-api-key": true, "authorization": true}

// Fingerprint is how a secret header's value is logged: "sha256:" and the first 16 hex digits.
func Fingerprint(v string) string {
	sum := sha256.Sum256([]byte(v))
	return "sha256:" + hex.EncodeToString(sum[:8])
}

func (a *api) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	rec := record{Time: time.Now().UTC(), Method: r.Method, Path: r.URL.Path, Headers: map[string]string{}}
	for k, v := range r.Header {
		k = strings.ToLower(k)
		rec.Headers[k] = strings.Join(v, ", ")
		if secretHeaders[k] {
			rec.Headers[k] = Fingerprint(strings.Join(v, ", "))
		}
	}
	if json.Valid(body) {
		rec.Body = body
		if r.Method == http.MethodPost {
			rec.Fetched = fetchSources(r.Context(), body)
		}
	}
	w.Header().Set("request-id", "req_"+randomID())
	switch {
	case r.Header.Get("x-api-key") == "" && r.Header.Get("authorization") == "":
		// As the API does: no credential, no answer.
		rec.Kind = "other"
		rec.Status, rec.Answer = apiError(w, http.StatusUnauthorized, "authentication_error", "x-api-key header is required")
	case err != nil:
		rec.Kind = "other"
		rec.Status, rec.Answer = apiError(w, http.StatusBadRequest, "invalid_request_error", "reading the body: "+err.Error())
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		a.messages(r.Context(), w, body, &rec)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		rec.Kind, rec.Status, rec.Answer = "count_tokens", http.StatusOK, "input_tokens"
		writeJSON(w, http.StatusOK, map[string]int{"input_tokens": estimateTokens(len(body))})
	default:
		rec.Kind = "other"
		rec.Status, rec.Answer = apiError(w, http.StatusNotFound, "not_found_error", "Not found: "+r.Method+" "+r.URL.Path)
	}
	if err := a.requests.write(rec); err != nil {
		a.log.Error("request log", "err", err.Error())
	}
	a.log.Info("request", "method", r.Method, "path", r.URL.Path, "kind", rec.Kind, "answer", rec.Answer,
		"status", rec.Status, "bytes", len(body), "user_agent", r.UserAgent())
}

// slowModel is a model whose answers take slowAnswerTime, as a long non-streamed completion
// does before its first byte: a client may hang up before the headers.
const (
	slowModel      = "claude-test-slow"
	slowAnswerTime = 30 * time.Second
)

// slowAnswer waits slowAnswerTime, and reports false when the client left first.
func slowAnswer(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(slowAnswerTime):
		return true
	}
}

// fetchSources fetches every URL source in a request body (an object {"type": "url", "url":
// ...} anywhere: an image or document source, in a message, a tool result, the system prompt,
// or an MCP server), as the API's servers do before they answer, and returns what each gave.
func fetchSources(ctx context.Context, body []byte) []string {
	var v any
	if json.Unmarshal(body, &v) != nil {
		return nil
	}
	var urls []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if u, ok := v["url"].(string); ok && v["type"] == "url" {
				urls = append(urls, u)
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(v)
	client := &http.Client{Timeout: 5 * time.Second}
	var out []string
	for _, u := range urls {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err == nil {
			var resp *http.Response
			if resp, err = client.Do(req); err == nil {
				io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
				resp.Body.Close()
				out = append(out, u+" "+resp.Status)
				continue
			}
		}
		out = append(out, u+" "+err.Error())
	}
	return out
}

// messages answers POST /v1/messages.
func (a *api) messages(ctx context.Context, w http.ResponseWriter, body []byte, rec *record) {
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		rec.Kind = "other"
		rec.Status, rec.Answer = apiError(w, http.StatusBadRequest, "invalid_request_error", "the body is not a Messages request: "+err.Error())
		return
	}
	if req.Model == "" || len(req.Messages) == 0 {
		rec.Kind = "other"
		rec.Status, rec.Answer = apiError(w, http.StatusBadRequest, "invalid_request_error", "model and messages are required")
		return
	}
	if req.Model == slowModel {
		// Logged on arrival too, so that a test knows the request is here while it waits.
		arrived := *rec
		arrived.Kind, arrived.Answer = "side", "received: answering in "+slowAnswerTime.String()
		a.requests.write(arrived)
		if !slowAnswer(ctx) {
			rec.Kind, rec.Answer = "side", "abandoned: the client left before the answer"
			return
		}
	}
	var ans answer
	if req.conversation() {
		rec.Kind = "conversation"
		ans = req.next()
	} else {
		rec.Kind = "side"
		ans = answer{blocks: []outBlock{{Type: "text", Text: "abox e2e"}}}
	}
	if ans.errType != "" {
		rec.Status, rec.Answer = apiError(w, ans.status, ans.errType, ans.errMessage)
		return
	}
	rec.Status, rec.Answer = http.StatusOK, ans.summary()
	msg := ans.message(req.Model, estimateTokens(len(body)))
	if req.Stream {
		writeStream(w, msg)
	} else {
		writeJSON(w, http.StatusOK, msg)
	}
}

// apiError writes the API's error object and returns the status and a summary for the log.
func apiError(w http.ResponseWriter, status int, typ, message string) (int, string) {
	writeJSON(w, status, map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": message}})
	return status, "error:" + typ
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// estimateTokens is the API's token count, roughly: four bytes a token.
func estimateTokens(n int) int { return n/4 + 1 }

func randomID() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// message is the response object: the non-streaming body, and what message_start carries.
type message struct {
	ID           string     `json:"id"`
	Type         string     `json:"type"`
	Role         string     `json:"role"`
	Model        string     `json:"model"`
	Content      []outBlock `json:"content"`
	StopReason   *string    `json:"stop_reason"`
	StopSequence *string    `json:"stop_sequence"`
	Usage        usage      `json:"usage"`
}

type usage struct {
	InputTokens              int `json:"input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	OutputTokens             int `json:"output_tokens"`
}

// outBlock is a content block of the answer.
type outBlock struct {
	Type  string          `json:"type"` // text or tool_use
	Text  string          `json:"text,omitempty"`
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
}

func (a answer) message(model string, inputTokens int) message {
	stop := "end_turn"
	out := 0
	for _, b := range a.blocks {
		out += estimateTokens(len(b.Text) + len(b.Input))
		if b.Type == "tool_use" {
			stop = "tool_use"
		}
	}
	return message{
		ID: "msg_" + randomID(), Type: "message", Role: "assistant", Model: model,
		Content: a.blocks, StopReason: &stop, Usage: usage{InputTokens: inputTokens, OutputTokens: out},
	}
}

// writeStream sends msg as the API's server-sent events. message_start carries the message with
// no content and no stop reason; each block is opened empty, filled by deltas and closed; the
// stop reason and the output tokens come in message_delta.
func writeStream(w http.ResponseWriter, msg message) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	event := func(name string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	start := msg
	start.Content, start.StopReason = []outBlock{}, nil
	start.Usage.OutputTokens = 1
	event("message_start", map[string]any{"type": "message_start", "message": start})
	event("ping", map[string]string{"type": "ping"})
	for i, b := range msg.Content {
		open := b
		var deltas []map[string]string
		switch b.Type {
		case "text":
			open.Text = ""
			for _, c := range chunks(b.Text, 24) {
				deltas = append(deltas, map[string]string{"type": "text_delta", "text": c})
			}
		case "tool_use":
			open.Input = json.RawMessage(`{}`)
			deltas = append(deltas, map[string]string{"type": "input_json_delta", "partial_json": ""})
			for _, c := range chunks(string(b.Input), 16) {
				deltas = append(deltas, map[string]string{"type": "input_json_delta", "partial_json": c})
			}
		}
		if open.Type == "text" {
			// text is "" here, which omitempty would drop; the API always sends it.
			event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]string{"type": "text", "text": ""}})
		} else {
			event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": open})
		}
		for _, d := range deltas {
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": d})
		}
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": msg.StopReason, "stop_sequence": nil},
		"usage": map[string]int{"output_tokens": msg.Usage.OutputTokens}})
	event("message_stop", map[string]string{"type": "message_stop"})
}

// chunks splits s into pieces of at most n bytes, never inside a UTF-8 sequence.
func chunks(s string, n int) []string {
	var out []string
	for len(s) > n {
		i := n
		for i > 0 && s[i]&0xC0 == 0x80 {
			i--
		}
		if i == 0 {
			i = n
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}
