package sandbox

import (
	"context"
	"sync"

	"github.com/aboxhq/abox/internal/artifact"
	"github.com/aboxhq/abox/internal/docker"
)

// Prefetching the preflight's inspections
//
// The preflight's docker calls (the netd and agent images, the network, the gateway) are
// independent of each other and each costs a docker CLI process (~25 ms on the CI machine), so
// [Preflight.Prefetch] starts them all at once, before the checks that need them, and the checks
// then take their answers instead of asking again. The checks still run in their order and make
// the same decisions: a prefetched answer is only the answer the check's own call would have had,
// asked a few milliseconds earlier.
//
// The names to inspect come from runspec.json and netd.json as read before the artifacts are
// verified against artifacts.json. That is safe: an answer is kept under the name it is for and
// taken only by a check asking for that same name, with the names of the verified runspec; a
// tampered runspec can only make the prefetch inspect something no check asks for (a wasted
// call), never hand a check the answer for another name.

// prefetched holds the answers of the inspections started ahead, by what they inspect.
type prefetched struct {
	mu      sync.Mutex
	pending map[string]*answer
	stop    context.CancelFunc
}

// answer is one inspection started ahead; done is closed once v and err are set.
type answer struct {
	done chan struct{}
	v    any
	err  error
}

// Prefetch starts, in the background, the inspections the preflight will make for the runspec
// and netd policy now in the project's artifacts. It returns at once; [Preflight.Run] takes the
// answers. The returned function stops what is still running (call it when the preflight's
// caller is done with it). Without a Prefetch, Run makes each call itself, in order.
func (p *Preflight) Prefetch(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	pf := &prefetched{pending: map[string]*answer{}, stop: cancel}
	p.ahead = pf
	rs, err := artifact.ReadRunSpec(p.Project)
	if err != nil {
		return cancel // the preflight refuses it, with the reason
	}
	pf.start(ctx, "image "+rs.Netd.Image, func(ctx context.Context) (any, error) {
		return p.Docker.ImageInspect(ctx, rs.Netd.Image)
	})
	if rs.Agent.Image != rs.Netd.Image {
		pf.start(ctx, "image "+rs.Agent.Image, func(ctx context.Context) (any, error) {
			return p.Docker.ImageInspect(ctx, rs.Agent.Image)
		})
	}
	pf.start(ctx, "network "+rs.Network, func(ctx context.Context) (any, error) {
		return p.Docker.NetworkInspect(ctx, rs.Network)
	})
	if np, err := p.netdPolicy(); err == nil && np.MCP != nil && p.Gateways != nil {
		pf.start(ctx, "gateway "+rs.Profile, func(ctx context.Context) (any, error) {
			return p.Gateways.Inspect(ctx, rs.Profile)
		})
	}
	return cancel
}

// start runs fn in the background as the answer for key.
func (pf *prefetched) start(ctx context.Context, key string, fn func(context.Context) (any, error)) {
	a := &answer{done: make(chan struct{})}
	pf.mu.Lock()
	pf.pending[key] = a
	pf.mu.Unlock()
	go func() {
		defer close(a.done)
		a.v, a.err = fn(ctx)
	}()
}

// take returns the answer started for key, waiting for it, and forgets it: a later check of the
// same thing asks again. ok is false when nothing was started for key (then the caller asks).
func (pf *prefetched) take(key string) (v any, err error, ok bool) {
	if pf == nil {
		return nil, nil, false
	}
	pf.mu.Lock()
	a, ok := pf.pending[key]
	delete(pf.pending, key)
	pf.mu.Unlock()
	if !ok {
		return nil, nil, false
	}
	<-a.done
	return a.v, a.err, true
}

// imageInspect is [docker.Client.ImageInspect], answered by the prefetch when it asked.
func (p *Preflight) imageInspect(ctx context.Context, ref string) (*docker.Image, error) {
	if v, err, ok := p.ahead.take("image " + ref); ok {
		img, _ := v.(*docker.Image)
		return img, err
	}
	return p.Docker.ImageInspect(ctx, ref)
}

// networkInspect is [docker.Client.NetworkInspect], answered by the prefetch when it asked.
func (p *Preflight) networkInspect(ctx context.Context, name string) (*docker.Network, error) {
	if v, err, ok := p.ahead.take("network " + name); ok {
		n, _ := v.(*docker.Network)
		return n, err
	}
	return p.Docker.NetworkInspect(ctx, name)
}

// gatewayInspect is [gateway.Manager.Inspect], answered by the prefetch when it asked.
func (p *Preflight) gatewayInspect(ctx context.Context, profile string) (*docker.Container, error) {
	if v, err, ok := p.ahead.take("gateway " + profile); ok {
		c, _ := v.(*docker.Container)
		return c, err
	}
	return p.Gateways.Inspect(ctx, profile)
}
