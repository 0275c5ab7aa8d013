package secrets

import (
	"sort"

	"github.com/aboxhq/abox/internal/catalog"
	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/manifest"
)

// Kinds of use: the three ways a secret is consumed.
const (
	UseEnv    = "env"    // handed to the agent as an environment variable (env_secrets)
	UseServer = "server" // read by a declared catalog or custom server
	UseRemote = "remote" // injected into a remote server's headers
)

// Need is one secret that one consumer requires.
type Need struct {
	Secret string `json:"secret"`
	Kind   string `json:"kind"` // UseEnv, UseServer or UseRemote
	By     string `json:"by"`   // the agent's variable, the server or the remote server
}

// String is "env API_KEY", "server github-official" or "remote acme".
func (n Need) String() string { return n.Kind + " " + n.By }

// Needs returns what the manifest m requires, given the servers abox knows: the secrets attached
// to the agent, those of its declared catalog and custom servers, and those of its remote
// servers. It is the one required set: `abox secrets check`, doctor and the gateway's start all
// ask it, so they cannot disagree. A server the catalog does not know adds nothing (doctor's
// servers.declared reports it).
func Needs(m *manifest.Manifest, cat *catalog.Catalog) []Need {
	var out []Need
	for env, s := range m.EnvSecrets {
		out = append(out, Need{Secret: s, Kind: UseEnv, By: env})
	}
	out = append(out, serverNeeds(m.Servers, cat)...)
	for name, r := range m.RemoteServers {
		for _, s := range r.Secrets {
			out = append(out, Need{Secret: s.Name, Kind: UseRemote, By: name})
		}
	}
	return sortNeeds(out)
}

// Required is the one required set of a project, which `abox secrets check` and doctor both
// ask: what its workspace manifest and the manifest approved by `abox up` (nil when there is
// none) need, together. The approved copy is what runs; the workspace copy is what the next
// `abox up` approves.
func Required(workspace, approved *manifest.Manifest, cat *catalog.Catalog) []Need {
	var out []Need
	for _, m := range []*manifest.Manifest{workspace, approved} {
		if m != nil {
			out = append(out, Needs(m, cat)...)
		}
	}
	return sortNeeds(out)
}

// GatewayNeeds returns what the gateway serving u must hand to its servers: the secrets of its
// catalog and custom servers and of its remote servers. The agent's own are not the gateway's.
func GatewayNeeds(u *gateway.Union, cat *catalog.Catalog) []Need {
	out := serverNeeds(u.Servers, cat)
	for name, r := range u.Remote {
		for _, s := range r.Secrets {
			out = append(out, Need{Secret: s.Name, Kind: UseRemote, By: name})
		}
	}
	return sortNeeds(out)
}

// bindingNeeds returns what a registry binding records: its servers' and remote servers'
// secrets. It outlives the manifest, so a project whose manifest moved still shows them.
func bindingNeeds(b gateway.Binding, cat *catalog.Catalog) []Need {
	out := serverNeeds(b.Servers, cat)
	for name, r := range b.RemoteServers {
		for _, s := range r.Secrets {
			out = append(out, Need{Secret: s.Name, Kind: UseRemote, By: name})
		}
	}
	return out
}

func serverNeeds(servers []string, cat *catalog.Catalog) []Need {
	if cat == nil {
		return nil
	}
	var out []Need
	for _, s := range servers {
		e, ok := cat.Lookup(s)
		if !ok {
			continue
		}
		for _, sec := range e.Secrets {
			out = append(out, Need{Secret: sec.Name, Kind: UseServer, By: s})
		}
	}
	return out
}

// sortNeeds sorts by secret, kind and consumer, and drops duplicates.
func sortNeeds(n []Need) []Need {
	sort.Slice(n, func(i, j int) bool {
		a, b := n[i], n[j]
		if a.Secret != b.Secret {
			return a.Secret < b.Secret
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.By < b.By
	})
	var out []Need
	for _, x := range n {
		if len(out) == 0 || x != out[len(out)-1] {
			out = append(out, x)
		}
	}
	return out
}

// Names returns the distinct secrets of needs, sorted.
func Names(needs []Need) []string {
	var out []string
	for _, n := range sortNeeds(append([]Need(nil), needs...)) {
		if len(out) == 0 || out[len(out)-1] != n.Secret {
			out = append(out, n.Secret)
		}
	}
	return out
}
