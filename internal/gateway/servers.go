package gateway

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/statefs"
)

// Server containers, and those left behind
//
// The gateway runs each stdio server in a container of its own, through the docker socket
// mounted into it. abox runs it long-lived (--long-lived): a server's container belongs to one
// MCP session, so a tool call after the first of a session costs no container start, and the
// container is stopped when the session ends. A session is a run's: netd's forwarder opens it
// and closes it (DELETE) when the run's netd finishes. docker/mcp-gateway v0.43 still leaves a
// session's container behind in two ways: a DELETE that arrives while the server's tools are
// being listed again (after a tools/list_changed) deadlocks the release, and a gateway stopped
// or killed mid-release leaves the containers it had. So abox removes them itself
// ([Servers.Sweep]), and doctor names any that outlive their run ([Servers.Orphans]).
//
// The gateway labels what it starts docker-mcp=true and the server's name, but nothing says
// which session, gateway or profile a container serves, and every profile's gateway is on the
// one abox network. What does say it is time: a session is opened by a netd's forwarder, after
// that netd started, and its containers are started after the session opened. So a server
// container created before every netd now running on its network belongs to a run that is
// over; one created after some such netd started may be a live run's, and is kept. A spare
// netd no run has claimed yet serves no session and does not count; one claimed counts from
// its creation, before its run began, which keeps more, never less. The rule never removes a
// live session's container; it may keep an orphan while a run that started before it lives,
// until the sweep after that run.
//
// The gateway also starts every server once when it starts, to list its tools. Those containers
// are nobody's session, and removing one would leave the gateway without that server's tools.
// A gateway is started only under its profile's lock ([Reconcile]), so a sweep takes the lock
// of every configured profile before it looks. A gateway the daemon restarts by itself (its
// restart policy, after a crash or a daemon restart) lists its servers under no lock: a sweep
// at that moment can remove a listing container, and the gateway then serves without that
// server's tools until it is recreated.

// Labels docker/mcp-gateway gives the containers of its servers.
const (
	ServerLabel     = "docker-mcp"
	ServerNameLabel = "docker-mcp-name"
)

// ServerContainer is a container the gateway started for an MCP server.
type ServerContainer struct {
	ID      string
	Name    string // without the daemon's leading "/"
	Server  string // the catalog's name for it
	Created time.Time
}

// Servers is where the server containers of finished runs are looked for.
type Servers struct {
	Docker  *docker.Client
	Network string // the abox network, every gateway's
	// Idle returns the netds that serve no run, by container name: the projects' spare netds
	// not claimed yet. A spare opens no session until a run claims it, so it protects no server
	// container; taken for a live run's, one idling for days would protect every container
	// created since. Nil: none.
	Idle func() ([]string, error)
}

// Orphans returns the server containers of the network whose run is over: those created
// before every netd running on the network but the idle ones, and every one when there is
// none. A container with no network (server_network: none) is counted on the network when one
// of the network's gateways serves its server.
func (sv Servers) Orphans(ctx context.Context) ([]ServerContainer, error) {
	d, network := sv.Docker, sv.Network
	servers, err := containersCreated(ctx, d, map[string]string{ServerLabel: "true"}, true)
	if err != nil {
		return nil, fmt.Errorf("listing the MCP server containers: %w", err)
	}
	if len(servers) == 0 {
		return nil, nil
	}
	netds, err := containersCreated(ctx, d, map[string]string{"abox.managed": "true", "abox.role": "netd"}, false)
	if err != nil {
		return nil, fmt.Errorf("listing the running netds: %w", err)
	}
	// Read after the listings: a spare idle now was claimed by no run when any container
	// listed above was created.
	var idle []string
	if sv.Idle != nil {
		if idle, err = sv.Idle(); err != nil {
			return nil, fmt.Errorf("reading the projects' spare netds: %w", err)
		}
	}
	var oldest time.Time
	for _, n := range netds {
		if _, on := n.NetworkSettings.Networks[network]; !on {
			continue // it reaches no gateway of this network, and opens no session there
		}
		if slices.Contains(idle, strings.TrimPrefix(n.Name, "/")) {
			continue
		}
		if oldest.IsZero() || n.created.Before(oldest) {
			oldest = n.created
		}
	}
	offline, err := sv.offlineServers(ctx)
	if err != nil {
		return nil, err
	}
	var out []ServerContainer
	for _, s := range servers {
		name := s.Config.Labels[ServerNameLabel]
		_, on := s.NetworkSettings.Networks[network]
		if _, none := s.NetworkSettings.Networks["none"]; none && offline[name] {
			on = true
		}
		if !on || !oldest.IsZero() && !s.created.Before(oldest) {
			continue
		}
		out = append(out, ServerContainer{ID: s.ID, Name: strings.TrimPrefix(s.Name, "/"), Server: name, Created: s.created})
	}
	slices.SortFunc(out, func(a, b ServerContainer) int { return a.Created.Compare(b.Created) })
	return out, nil
}

// offlineServers returns the servers the network's running gateways serve (their --servers): a
// server_network: none server's containers have no network to tell whose they are.
func (sv Servers) offlineServers(ctx context.Context) (map[string]bool, error) {
	gws, err := containersCreated(ctx, sv.Docker, map[string]string{"abox.managed": "true", "abox.role": "gateway"}, false)
	if err != nil {
		return nil, fmt.Errorf("listing the gateways: %w", err)
	}
	served := map[string]bool{}
	for _, g := range gws {
		if _, on := g.NetworkSettings.Networks[sv.Network]; !on {
			continue
		}
		if v, ok := ArgValue(g.Args, "--servers"); ok {
			for _, name := range strings.Split(v, ",") {
				served[name] = true
			}
		}
	}
	return served, nil
}

// Sweep removes the server containers whose run is over ([Servers.Orphans]), holding the lock
// of every profile in profiles (config.yaml's; gatewaysDir is paths.Paths.GatewaysDir), so
// that no gateway abox starts is listing its servers meanwhile. A lock still held by another
// process when ctx ends (a gateway slow to start) ends the sweep with an error and nothing
// removed: the next sweep does it. It returns what it removed.
func (sv Servers) Sweep(ctx context.Context, gatewaysDir string, profiles []string) ([]ServerContainer, error) {
	profiles = slices.Sorted(slices.Values(profiles))
	for _, p := range slices.Compact(profiles) { // in one order, as every sweep takes them
		lock := filepath.Join(gatewaysDir, p, lockFile)
		if _, err := os.Stat(lock); !validProfileDir(p) || errors.Is(err, fs.ErrNotExist) {
			// No gateway of the profile was ever started: there is nothing to wait for, and the
			// sweep makes no directory for it (the after-run process of a project without MCP
			// servers would otherwise leave one behind in state it does not own).
			continue
		}
		unlock, err := statefs.LockContext(ctx, lock)
		if err != nil {
			return nil, fmt.Errorf("a gateway of profile %s is being started (the next sweep removes what this one would): %w", p, err)
		}
		defer unlock()
	}
	orphans, err := sv.Orphans(ctx)
	if err != nil || len(orphans) == 0 {
		return nil, err
	}
	ids := make([]string, len(orphans))
	for i, o := range orphans {
		ids[i] = o.ID
	}
	if err := sv.Docker.Remove(ctx, true, false, ids...); err != nil {
		return nil, fmt.Errorf("removing MCP server containers left by finished runs: %w", err)
	}
	return orphans, nil
}

// validProfileDir reports whether a profile label can name a directory under gateways/: a
// label is the daemon's, and any container may carry one.
func validProfileDir(p string) bool {
	return p != "." && p != ".." && filepath.Base(p) == p
}

// created is an inspected container and when it was created.
type created struct {
	docker.Container
	created time.Time
}

// containersCreated inspects the containers with labels (running ones only unless all). One
// gone between the listing and its inspection is left out.
func containersCreated(ctx context.Context, d *docker.Client, labels map[string]string, all bool) ([]created, error) {
	list, err := d.ContainersByLabel(ctx, labels, all)
	if err != nil {
		return nil, err
	}
	var out []created
	for _, c := range list {
		ct, err := d.ContainerInspect(ctx, c.ID)
		if errors.Is(err, docker.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		t, err := time.Parse(time.RFC3339Nano, ct.Created)
		if err != nil {
			return nil, fmt.Errorf("container %s: its creation time %q: %w", c.ID, ct.Created, err)
		}
		out = append(out, created{Container: *ct, created: t})
	}
	return out, nil
}
