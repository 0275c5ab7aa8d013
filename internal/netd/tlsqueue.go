package netd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/aboxhq/abox/internal/egress"
	"github.com/aboxhq/abox/internal/policy"
)

// openTLSQueue loads the queue rule from the policy directory and opens the TLS queue, or
// records why the fast path is off and returns nil. Off, netd's serving child opens nothing in
// policy.SetTLS, no flow is ever held, and every TLS connection goes through the SNI proxy:
// slower, never wider.
func (s *supervisor) openTLSQueue(ctx context.Context) tlsQueue {
	if s.o.tlsQueue == nil {
		s.fastOff = "no queue in this netd"
		return nil
	}
	rules, err := os.ReadFile(s.path(policy.QueueFile))
	if err != nil {
		s.fastOff = fmt.Sprintf("reading %s: %v", policy.QueueFile, err)
		return nil
	}
	q, err := s.o.tlsQueue(ctx, rules)
	if err != nil {
		s.fastOff = err.Error()
		return nil
	}
	return q
}

// askChild returns the gate's way to the child's decisions: each question goes over the control
// channel and waits for its answer. The supervisor takes an allowed answer only for a canonical
// name its own copy of the policy allows on 443; a compromised child can refuse anything, but
// allow only what the allowlist names.
func (s *supervisor) askChild(rc *runningChild) func(context.Context, tlsQuestion) tlsAnswer {
	return func(ctx context.Context, q tlsQuestion) tlsAnswer {
		id, ch := s.answers.open()
		defer s.answers.close(id)
		if err := rc.ctl.send(message{Op: opTLSCheck, ID: id, Flow: q.flow.String(), Hello: q.hello}); err != nil {
			return tlsAnswer{err: err, unlogged: true}
		}
		select {
		case m := <-ch:
			if m.Error != "" {
				return tlsAnswer{err: errors.New(m.Error)}
			}
			if name, ok := egress.NormalizeName(m.Name); !ok || name != m.Name || !s.sets.allows(name, 443) {
				return tlsAnswer{err: fmt.Errorf("the child allowed %q, which the policy does not allow on 443", m.Name), unlogged: true}
			}
			return tlsAnswer{name: m.Name}
		case <-ctx.Done():
			return tlsAnswer{err: fmt.Errorf("no decision from the serving child: %w", ctx.Err()), unlogged: true}
		}
	}
}

// pendingAnswers routes the child's answers to the questions waiting for them, by ID.
type pendingAnswers struct {
	mu      sync.Mutex
	next    uint64
	waiting map[uint64]chan message
}

func newPendingAnswers() *pendingAnswers {
	return &pendingAnswers{waiting: map[uint64]chan message{}}
}

func (p *pendingAnswers) open() (uint64, chan message) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next++
	ch := make(chan message, 1)
	p.waiting[p.next] = ch
	return p.next, ch
}

func (p *pendingAnswers) close(id uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.waiting, id)
}

// resolve delivers an answer; one for no waiting question (late, or made up) is dropped.
func (p *pendingAnswers) resolve(m message) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ch, ok := p.waiting[m.ID]; ok {
		ch <- m
		delete(p.waiting, m.ID)
	}
}
