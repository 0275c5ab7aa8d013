package netd

import (
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/aboxhq/abox/internal/policy"
)

// eventLog writes lifecycle events ([policy.Event]) as JSON lines to stdout, where the CLI waits
// for "ready", and to netd.jsonl once that file is open. Only the supervisor writes it; the child
// can report only reload and error events, so it cannot forge a "ready".
type eventLog struct {
	mu     sync.Mutex
	stdout io.Writer
	file   io.Writer // nil until the log directory is set up
	now    func() time.Time
}

func (l *eventLog) emit(event, detail string) {
	b, _ := json.Marshal(policy.Event{TS: policy.Timestamp(l.now()), Event: event, Detail: detail})
	b = append(b, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stdout.Write(b)
	if l.file != nil {
		l.file.Write(b)
	}
}

func (l *eventLog) setFile(w io.Writer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.file = w
}

// maxChildDetail bounds what the child may put into one event.
const maxChildDetail = 2048

// childEvent returns the event a child message may log, or false if the child may not log it.
func childEvent(m message) (event, detail string, ok bool) {
	if m.Event != policy.EventReload && m.Event != policy.EventError {
		return "", "", false
	}
	detail = m.Detail
	if len(detail) > maxChildDetail {
		detail = detail[:maxChildDetail] + "…"
	}
	return m.Event, "child: " + detail, true
}
