//go:build e2e

package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ReleaseDeadlockEnv, set to 1, reproduces a bug of docker/mcp-gateway: a session's DELETE
// that arrives while a capability refresh runs through that session's long-lived client never
// releases the client, so its server container stays up until the gateway stops. The stub
// models the effect reported with the real gateway, not its mechanism; reading v0.43.3-6 one
// path that gives it is a refresh queued behind the release, which finds the session's key
// gone and starts a new kept container for the closed session. Without the switch the stub
// releases such a session's client once its queued refreshes are done, and skips any refresh
// that comes after the release.
const ReleaseDeadlockEnv = "MCPSTUB_RELEASE_DEADLOCK"

// spawnedServer is a catalog server the stub gateway runs as a container.
type spawnedServer struct {
	name string
	spec catalogServer
}

// spawner starts the process of one server for a client of the pool and returns the transport
// to it and the argv it ran (for the log). [dockerSpawner] runs `docker run`; tests serve
// in-process.
type spawner interface {
	spawn(ctx context.Context, s spawnedServer) (mcp.Transport, []string, error)
}

// pool holds the stub gateway's clients of spawned servers as docker/mcp-gateway's clientPool
// does. A client belongs to one server and one MCP session (none for the start-up listing). It
// is kept for the session only with --long-lived or the catalog's longLived: otherwise every
// call or refresh starts its own container and closes it when done. Kept clients are closed
// when their session closes, if it sent initialized, and at gateway stop. Every container
// started and closed is logged with its client id (c1, c2… in start order), its container (as
// its server reports it), server, session, why, and how long the start or close took.
type pool struct {
	spawner   spawner
	longLived bool // --long-lived
	deadlock  bool // ReleaseDeadlockEnv
	log       *slog.Logger
	// listed records the tools a refresh listed.
	listed func(server string, tools []*mcp.Tool)

	mu         sync.Mutex
	kept       map[clientKey]*client
	released   map[string]bool // sessions whose clients were released
	stuck      []*client       // clients a release left open (ReleaseDeadlockEnv)
	refreshing map[string]bool // servers with a refresh running: the real gateway's guard
	serial     int
}

func newPool(sp spawner, longLived bool, log *slog.Logger) *pool {
	return &pool{spawner: sp, longLived: longLived, log: log, kept: map[clientKey]*client{},
		released: map[string]bool{}, refreshing: map[string]bool{}}
}

type clientKey struct{ server, session string }

// client is one connection to a spawned server: one container.
type client struct {
	n         int    // start order
	id        string // "c<n>"
	key       clientKey
	kept      bool
	why       string // what started it: list, call or refresh
	once      sync.Once
	err       error
	cs        *mcp.ClientSession
	container string
	refreshes atomic.Int32 // refreshes listing through it now
}

var (
	errSessionReleased = errors.New("the session's clients were released")
	errNeverStarted    = errors.New("never started")
)

// acquire returns a started client of s for the session ss (nil: the start-up listing): the
// session's kept one, or a new one. A kept container is started with a context of its own, as
// it outlives the request; the others die with theirs.
func (p *pool) acquire(ctx context.Context, s spawnedServer, ss *mcp.ServerSession, why string) (*client, error) {
	key := clientKey{server: s.name}
	if ss != nil {
		key.session = ss.ID()
	}
	keep := ss != nil && (s.spec.LongLived || p.longLived)
	c, err := p.lookup(key, keep, why)
	if err != nil {
		return nil, err
	}
	if keep {
		ctx = context.Background()
	}
	c.once.Do(func() { c.err = p.start(ctx, c, s, ss) })
	if c.err != nil && keep {
		p.mu.Lock()
		if p.kept[key] == c {
			delete(p.kept, key)
		}
		p.mu.Unlock()
	}
	return c, c.err
}

func (p *pool) lookup(key clientKey, keep bool, why string) (*client, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if keep {
		if c := p.kept[key]; c != nil {
			return c, nil
		}
		if p.released[key.session] {
			return nil, errSessionReleased
		}
	}
	p.serial++
	c := &client{n: p.serial, id: fmt.Sprintf("c%d", p.serial), key: key, kept: keep, why: why}
	if keep {
		p.kept[key] = c
	}
	return c, nil
}

// start spawns the server and initializes a client with the real gateway's options.
func (p *pool) start(ctx context.Context, c *client, s spawnedServer, ss *mcp.ServerSession) error {
	begin := time.Now()
	t, argv, err := p.spawner.spawn(ctx, s)
	if err == nil {
		impl := &mcp.Implementation{Name: "docker-mcp-gateway", Version: "1.0.0"}
		c.cs, err = mcp.NewClient(impl, p.clientOptions(s, ss)).
			Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: legacyProtocol})
	}
	if err != nil {
		p.log.Warn("container", "event", "failed", "client", c.id, "server", s.name, "session", c.key.session,
			"why", c.why, "argv", argv, "error", err.Error())
		return fmt.Errorf("calling initialize: %w", err)
	}
	if info := c.cs.InitializeResult().ServerInfo; info != nil {
		c.container, _ = strings.CutPrefix(info.Title, serverTitlePrefix)
	}
	p.log.Info("container", "event", "start", "client", c.id, "container", c.container, "server", s.name,
		"session", c.key.session, "why", c.why, "kept", c.kept, "ms", millis(time.Since(begin)), "argv", argv)
	return nil
}

// clientOptions are the real gateway's (pkg/mcp/mcp_client.go): roots (the go-sdk default,
// answered with none), sampling refused, elicitation passed to the session's client, and a
// refresh on tools/list_changed, only for a client that serves a session. The go-sdk client
// handles notifications one at a time, and closing it waits for those queued.
func (p *pool) clientOptions(s spawnedServer, ss *mcp.ServerSession) *mcp.ClientOptions {
	return &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return nil, errors.New("create messages not supported")
		},
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if ss == nil {
				return nil, errors.New("elicitation handled without server session")
			}
			return ss.Elicit(ctx, req.Params)
		},
		ToolListChangedHandler: func(ctx context.Context, _ *mcp.ToolListChangedRequest) {
			if ss != nil {
				p.refresh(ctx, s, ss)
			}
		},
	}
}

// release ends a client after a call or refresh, unless it is kept.
func (p *pool) release(c *client) {
	if !c.kept {
		p.close(c, "after "+c.why)
	}
}

// close closes a client as the go-sdk's CommandTransport does: it waits for the notifications
// queued, closes stdin, waits up to 5 s for the docker CLI to exit, then sends it SIGTERM (which
// docker run passes to the container), and SIGKILL 5 s later.
func (p *pool) close(c *client, why string) {
	begin := time.Now()
	err := c.cs.Close()
	p.log.Info("container", "event", "close", "client", c.id, "container", c.container, "server", c.key.server,
		"session", c.key.session, "why", why, "ms", millis(time.Since(begin)), "exit", errText(err))
}

// releaseSession closes the kept clients of a session that ended (a DELETE), as the real
// gateway does for a session that sent initialized.
func (p *pool) releaseSession(session string) {
	p.mu.Lock()
	p.released[session] = true
	var mine []*client
	for k, c := range p.kept {
		if k.session == session {
			mine = append(mine, c)
			delete(p.kept, k)
		}
	}
	p.mu.Unlock()
	for _, c := range mine {
		if c.once.Do(func() { c.err = errNeverStarted }); c.err != nil {
			continue
		}
		if p.deadlock && c.refreshes.Load() > 0 {
			p.log.Warn("release", "event", "stuck", "client", c.id, "container", c.container, "server", c.key.server,
				"session", session, "why", ReleaseDeadlockEnv+"=1: the DELETE came while a refresh ran")
			p.mu.Lock()
			p.stuck = append(p.stuck, c)
			p.mu.Unlock()
			continue
		}
		p.close(c, "session closed")
	}
}

// closeAll closes every kept client, one after another as the real gateway does at stop.
func (p *pool) closeAll() {
	p.mu.Lock()
	all := append(slices.Collect(maps.Values(p.kept)), p.stuck...)
	p.kept, p.stuck = map[clientKey]*client{}, nil
	p.mu.Unlock()
	slices.SortFunc(all, func(a, b *client) int { return cmp.Compare(a.n, b.n) })
	for _, c := range all {
		if c.once.Do(func() { c.err = errNeverStarted }); c.err == nil {
			p.close(c, "gateway stop")
		}
	}
}

// refresh is the real gateway's RefreshCapabilities for one server: skipped while another
// refresh of the same server runs, else it lists the tools through a client of the session
// (the kept one, or a new container) and records them.
func (p *pool) refresh(ctx context.Context, s spawnedServer, ss *mcp.ServerSession) {
	p.mu.Lock()
	busy := p.refreshing[s.name]
	p.refreshing[s.name] = true
	p.mu.Unlock()
	if busy {
		p.log.Info("refresh", "server", s.name, "session", ss.ID(), "skipped", "a refresh of the server is running")
		return
	}
	defer func() {
		p.mu.Lock()
		delete(p.refreshing, s.name)
		p.mu.Unlock()
	}()
	begin := time.Now()
	c, err := p.acquire(ctx, s, ss, "refresh")
	if errors.Is(err, errSessionReleased) {
		p.log.Info("refresh", "server", s.name, "session", ss.ID(), "skipped", "the session was released")
		return
	}
	if err != nil {
		p.log.Warn("refresh", "server", s.name, "session", ss.ID(), "error", err.Error())
		return
	}
	c.refreshes.Add(1)
	res, err := c.cs.ListTools(ctx, nil)
	c.refreshes.Add(-1)
	p.release(c)
	if err != nil {
		p.log.Warn("refresh", "server", s.name, "session", ss.ID(), "client", c.id, "error", err.Error())
		return
	}
	p.log.Info("refresh", "server", s.name, "session", ss.ID(), "client", c.id, "tools", len(res.Tools),
		"ms", millis(time.Since(begin)))
	if p.listed != nil {
		p.listed(s.name, res.Tools)
	}
}

// millis is d in milliseconds, to the microsecond.
func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
