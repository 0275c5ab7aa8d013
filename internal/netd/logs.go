package netd

import (
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/aboxhq/abox/internal/policy"
)

// maxLogBytes caps each decision log, so that an agent flooding queries cannot fill the disk;
// records past the cap are counted and dropped.
const maxLogBytes = 256 << 20

// jsonl appends one JSON object a line to a writer, up to a byte limit. It is safe for
// concurrent use. A nil *jsonl discards everything.
type jsonl struct {
	mu      sync.Mutex
	w       io.Writer
	n       int64
	limit   int64
	dropped int64
}

func newJSONL(w io.Writer, limit int64) *jsonl { return &jsonl{w: w, limit: limit} }

// write appends v. Once the limit is reached it writes one {"ts":…,"truncated":true} line and
// drops the rest.
func (j *jsonl) write(v any) {
	if j == nil {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	b = append(b, '\n')
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.n+int64(len(b)) > j.limit {
		if j.dropped == 0 {
			mark, _ := json.Marshal(struct {
				TS        string `json:"ts"`
				Truncated bool   `json:"truncated"`
			}{policy.Timestamp(time.Now()), true})
			j.w.Write(append(mark, '\n'))
		}
		j.dropped++
		return
	}
	if _, err := j.w.Write(b); err == nil {
		j.n += int64(len(b))
	}
}

// logs are the child's decision logs.
type logs struct {
	dns, conn, mcp *jsonl
}

// since returns the milliseconds elapsed from start, for the DurMS of a record.
func since(start time.Time) int64 { return time.Since(start).Milliseconds() }
