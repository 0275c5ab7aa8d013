package netd

import (
	"errors"
	"io"
	"sync"
)

// byteBudget bounds the bytes a forwarder holds in memory at once, all requests together: the
// agent decides how many requests it sends and how large each is, and netd's child must stay
// under its memory limit whatever it decides. A request that would take the budget past its max
// is refused before any of it is read.
type byteBudget struct {
	mu   sync.Mutex
	held int64
	max  int64
}

// take takes n bytes of the budget, or reports false when they would take it past its max.
func (b *byteBudget) take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held+n > b.max {
		return false
	}
	b.held += n
	return true
}

// give gives back n bytes taken.
func (b *byteBudget) give(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.held -= n
}

// readBounded reads a body of length n (-1: unknown) of at most max bytes into one buffer of
// that size, so that what it holds is what a budget counts (growing one as it reads would leave
// up to as much again behind as garbage). An unknown length is read into max+1 bytes: a body
// that fills them is over the bound, which the caller sees by its length.
func readBounded(r io.Reader, n, max int64) ([]byte, error) {
	if n < 0 {
		body := make([]byte, max+1)
		m, err := io.ReadFull(r, body)
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return body[:m:m], nil
		}
		return body[:m], err
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, err
	}
	return body, nil
}
