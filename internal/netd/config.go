package netd

import (
	"fmt"
	"net/netip"
	"net/url"
	"sync/atomic"

	"github.com/aboxhq/abox/internal/egress"
	"github.com/aboxhq/abox/internal/policy"
)

// config is what the serving child enforces. A reload replaces it whole, so one decision never
// sees half of an old policy and half of a new one.
type config struct {
	list        *egress.List
	mcp         *policy.MCP // nil: the forwarder answers 503
	mcpUpstream *url.URL
	token       string // the gateway token; "" until the supervisor sends one
	// modelUpstream is where the model forwarder sends the agent's model requests, with
	// credential, the Claude credential netd injects; nil and "" outside injected mode.
	modelUpstream *url.URL
	credential    string
	// modelAddr is the upstream's address when the policy names it by one (an IP literal,
	// for a gateway without a name): netd never opens nor dials it for the agent, as
	// [policy.Netd.List] withholds an upstream's name.
	modelAddr netip.Addr
	// serverTools lets model requests through that ask the API's servers to run tools of their
	// own ([policy.ModelAPI.ServerTools]).
	serverTools bool
	resolvers   []string // the host's resolvers, asked when Docker's cannot answer
	logLimit    int64    // each decision log's cap; only the first configuration's counts
	// gateway is the only address the MCP forwarder dials, and so the only peer that ever
	// receives the token; zero when the run has none.
	gateway netip.AddrPort
	// tlsFast: the supervisor holds the TLS queue, so the resolver opens what it answers for a
	// name allowed on 443 in policy.SetTLS ("The TLS fast path").
	tlsFast bool
}

// newConfig parses a netd policy (policy.File) and pairs it with the gateway token and address.
// The supervisor checked the address when it read its flag ([parseGateway]).
func newConfig(raw []byte, token, credential, gateway string) (*config, error) {
	p, err := policy.Parse(raw)
	if err != nil {
		return nil, err
	}
	list, err := p.List()
	if err != nil {
		return nil, err
	}
	addrs, err := p.ResolverAddrs()
	if err != nil {
		return nil, err
	}
	var gw netip.AddrPort
	if gateway != "" {
		if gw, err = netip.ParseAddrPort(gateway); err != nil {
			return nil, fmt.Errorf("gateway address %q: %v", gateway, err)
		}
	}
	c := &config{list: list, mcp: p.MCP, token: token, credential: credential, gateway: gw, logLimit: p.LogLimitBytes()}
	if c.modelUpstream, err = modelUpstreamOf(p.Model); err != nil {
		return nil, err
	}
	c.serverTools = p.Model != nil && p.Model.ServerTools
	c.modelAddr = p.ModelAddr()
	for _, a := range addrs {
		c.resolvers = append(c.resolvers, a.String())
	}
	if p.MCP != nil {
		if c.mcpUpstream, err = mcpUpstream(p.MCP); err != nil {
			return nil, fmt.Errorf("netd policy: %w", err)
		}
	}
	return c, nil
}

// current holds the config every decision reads. Before the first store it allows nothing.
type current struct{ p atomic.Pointer[config] }

func (c *current) get() *config {
	if p := c.p.Load(); p != nil {
		return p
	}
	return &config{}
}

func (c *current) set(cfg *config) { c.p.Store(cfg) }

// toolAllowed reports whether the project may list and call tool, and the server to log
// ([policy.MCP.Allows]).
func (c *config) toolAllowed(tool string) (server string, ok bool) {
	if c.mcp == nil {
		return "", false
	}
	return c.mcp.Allows(tool)
}
