package gateway

import (
	"context"
	"path/filepath"

	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/manifest"
)

// BindProject records in the registry of m's profile what the project at ws (state hash hash)
// asks of its gateway, and mints the profile's token, which netd mounts, when m declares a
// server. gatewaysDir is paths.Paths.GatewaysDir. It returns the profiles the project left.
//
// The registry decides what `gateway up` starts, and the workspace manifest can be rewritten by
// the agent: the caller passes the approved manifest unless it has just approved m.
func BindProject(gatewaysDir, ws, hash string, m *manifest.Manifest, custom config.CustomServers) (left []string, err error) {
	b := NewBinding(ws, m, custom)
	if b.Declares() {
		if err := EnsureToken(filepath.Join(gatewaysDir, m.Profile)); err != nil {
			return nil, err
		}
	}
	return Bind(gatewaysDir, m.Profile, hash, b)
}

// Unbound is one profile a project left through [Manager.UnbindProject].
type Unbound struct {
	Profile string
	// Removed is set when its gateway was removed: no project of the profile declares a server
	// any more.
	Removed bool
	Err     error // removing that unused gateway failed
}

// UnbindProject removes the project hash from every registry under gatewaysDir, and removes a
// gateway no project needs any more: it would serve servers nobody asked for, with the docker
// socket.
func (m *Manager) UnbindProject(ctx context.Context, gatewaysDir, hash string) ([]Unbound, error) {
	from, err := Unbind(gatewaysDir, hash)
	if err != nil {
		return nil, err
	}
	var out []Unbound
	for _, prof := range from {
		u := Unbound{Profile: prof}
		reg, err := LoadRegistry(filepath.Join(gatewaysDir, prof), prof)
		if err == nil && reg.Union().Empty() {
			u.Removed, u.Err = m.Down(ctx, prof)
		}
		out = append(out, u)
	}
	return out, nil
}
