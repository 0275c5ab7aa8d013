package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/aboxhq/abox/internal/egress"
)

// Fixed identities and ports inside a sandbox.
const (
	NetdUID  = 990  // netd's serving process; the only uid the ruleset lets out ([NetdUIDFor])
	AgentUID = 1000 // the agent's default uid and gid (the workspace owner's, normally)

	DNSPort  = 15353 // netd's resolver; every uid's port-53 traffic is redirected here
	SNIPort  = 15443 // netd's TLS proxy; every uid's tcp/443 is redirected here
	HTTPPort = 15080 // netd's plain-HTTP proxy; every uid's tcp/80 is redirected here
	MCPPort  = 15811 // netd's MCP forwarder; mcp.json points here

	UpstreamDNS = "127.0.0.11:53" // Docker's embedded resolver; only netd's uid may reach it

	// UnprivilegedPortSysctl is the namespaced setting below which binding a port needs
	// CAP_NET_BIND_SERVICE; netd's container sets it to UnprivilegedPortStart, netd refuses to
	// start without it, and no uid without the capability (the agent) can then bind port 53 or
	// any other port below it, on any address.
	UnprivilegedPortSysctl = "net.ipv4.ip_unprivileged_port_start"
	UnprivilegedPortStart  = 1024

	// GatewayAddrFlag is the netd flag abox adds to netd's argv for each run that has MCP
	// servers: the gateway container's IPv4 address and port on the sandbox's network, read
	// from Docker. netd's MCP forwarder dials that address and no other.
	GatewayAddrFlag = "--gateway-addr"

	Table    = "abox"      // the nftables table, family inet
	SetAgent = "agent_dst" // (addr . port) any uid may reach: non-TLS ports of allowed names
	SetNetd  = "netd_dst"  // (addr . port) only netd's uid may reach: its own upstream connections
	// SetRevoked holds (addr . port) pairs of [SetAgent] and [SetTLS] that `abox egress rm`
	// revoked: the agent's established TCP flows to them are reset, not left to run on.
	SetRevoked = "revoked_dst"
	// SetTLS holds (addr . 443) pairs netd's resolver answered for names allowed on 443. The
	// agent's TLS connections to them are not redirected to the SNI proxy: their first packets
	// are held in [TLSQueue] until netd has read the ClientHello's server name, and the rest of
	// an allowed flow runs in the kernel ("The TLS fast path" in the netd package doc).
	SetTLS = "tls_dst"
	// SetRevokedFlow holds (agent addr . port . server addr . port) of TLS flows netd let run in
	// the kernel whose server name `abox egress rm` removed: reset, though established.
	SetRevokedFlow = "revoked_flow"
)

// The TLS fast path's marks. A flow's connection mark says who opened it (its low 16 bits:
// [MarkNetdFlow] or [MarkAgentFlow]) and, for an agent's TLS flow to [SetTLS], where its
// server-name check stands (the bits of [MarkTLSMask]). A packet netd's supervisor has judged
// comes back from the queue with one of the Verdict marks.
const (
	MarkNetdFlow  = 0x990
	MarkAgentFlow = 0x1
	MarkOwnerMask = 0xffff

	MarkTLSMask  = 0xf0000
	MarkTLSQueue = 0x10000 // the bit of the flows whose packets go to [TLSQueue]
	MarkTLSHeld  = 0x10000 // waiting for its ClientHello and the decision on it
	// MarkTLSPinned: the server name was allowed, and the hello's bytes are pinned: until the
	// server has acknowledged them, every packet that carries them leaves with the bytes netd
	// judged, whatever memory the agent's TCP sends them from.
	MarkTLSPinned  = 0x50000
	MarkTLSAllowed = 0x20000 // the hello is acknowledged: the kernel carries the flow
	MarkTLSRefused = 0x80000 // the server name was refused: every packet is reset

	VerdictAllow = 0xa11 // held → pinned: the flow's server name is allowed
	VerdictPass  = 0xa10 // held or pinned stays so: a packet judged on its own
	VerdictDeny  = 0xde1 // held or pinned → refused: the flow is reset
	VerdictFinal = 0xa12 // pinned → allowed: the server acknowledged the hello
)

// TLSQueue is the netfilter queue the held packets of [SetTLS] flows wait in for a verdict of
// netd's supervisor. With nobody reading it, or full, the kernel drops them: nothing of a held
// flow passes unjudged.
const TLSQueue = 0

// NetdSource is the loopback address netd asks Docker's resolver from. The ruleset lets no
// other uid send from it, so no flow of the agent's — opened, planted or waited for — can have
// the five-tuple of one of netd's queries.
var NetdSource = netip.MustParseAddr("127.0.0.99")

// NetdUIDFor returns the uid netd's serving process runs as beside an agent of agentUID:
// [NetdUID], unless that is the agent's own (a workspace owned by uid 990), then the next one.
// The ruleset lets netd's uid out and nobody else, so the two must never be one.
func NetdUIDFor(agentUID int) int {
	if agentUID == NetdUID {
		return NetdUID + 1
	}
	return NetdUID
}

// Paths inside the netd container.
const (
	Dir       = "/etc/abox"               // policy directory, mounted read-only
	File      = "netd.json"               // the netd policy, re-read on SIGHUP
	RulesFile = "netpolicy.nft"           // the ruleset, loaded once at start
	QueueFile = "netqueue.rules"          // the queue rule ([QueueRules]), loaded after it
	TokenFile = "/run/abox/gateway/token" // the profile's gateway token, read by netd's root process
	LogDir    = "/var/log/abox"           // decision logs, harvested at teardown
)

// Version is the schema version of [Netd].
const Version = 1

// Netd is the policy netd enforces. It holds no secret.
type Netd struct {
	Version      int      `json:"version"`
	Project      string   `json:"project"`
	Egress       []string `json:"egress"`        // canonical entries, mandatory ones included
	Mandatory    []string `json:"mandatory"`     // the subset of Egress abox added itself
	DefaultPorts []int    `json:"default_ports"` // ports of entries without one
	MCP          *MCP     `json:"mcp,omitempty"` // nil: the forwarder answers 503
	// Model is set in injected-credential mode: netd forwards the agent's model requests there
	// with the real credential. nil: the model forwarder answers 503.
	Model *ModelAPI `json:"model,omitempty"`
	// NetdUID is the uid of netd's serving process, which the ruleset names; 0 means
	// [NetdUID]. It differs from the agent's ([NetdUIDFor]).
	NetdUID int `json:"netd_uid,omitempty"`
	// Resolvers are the host's upstream DNS servers (IPv4, port 53). Docker's embedded resolver
	// answers container names itself but would forward every other name as root from inside
	// the sandbox's namespace, which the ruleset refuses (root there could be the agent). So for
	// names Docker cannot answer, netd asks these servers itself, from its own uid.
	Resolvers []string `json:"resolvers,omitempty"`
	// LogLimit caps each decision log (dns, conn, mcp) in bytes; 0 means [DefaultLogLimit].
	// netd reads it once, at start.
	LogLimit int64 `json:"log_limit,omitempty"`
}

// Bounds of [Netd.LogLimit]. The log directory is a volume on the host's disk, and a run's
// three decision logs may each fill their cap.
const (
	DefaultLogLimit = 256 << 20
	MinLogLimit     = 1 << 20
	MaxLogLimit     = 16 << 30
)

// LogLimitBytes returns the cap of each decision log.
func (p *Netd) LogLimitBytes() int64 {
	if p.LogLimit == 0 {
		return DefaultLogLimit
	}
	return p.LogLimit
}

// MCP configures netd's MCP forwarder.
type MCP struct {
	Upstream string   `json:"upstream"` // the profile gateway, e.g. http://abox-gw-dev:8811/mcp
	Servers  []string `json:"servers"`  // the project's declared servers, for the log
	// Tools maps every tool this project may list and call to the server that provides it. The
	// gateway serves the union of every project on its profile, so this is the project's own
	// narrowing, enforced again by netd.
	Tools map[string]string `json:"tools"`
	// Unlisted lets through tools Tools does not name. It is set only when a declared,
	// un-narrowed server has no tool list in its catalog entry; see [MCP.Allows] for the server
	// such a tool is logged under.
	Unlisted bool `json:"unlisted,omitempty"`
	// Prefixes maps each server whose tools nobody lists, but whose catalog entry sets a
	// prefix, to that prefix: the gateway lists every tool of it as <prefix>__<tool>.
	Prefixes map[string]string `json:"prefixes,omitempty"`
}

// Allows reports whether the project may list and call tool, and the server that provides it,
// for the log and `abox mcp cost`. A tool Tools names is allowed under its server. Any other
// tool is allowed only when Unlisted, and its server is read off the gateway's own name for it:
// the unlisted server whose prefix it carries, or else the only unlisted server without a
// prefix. "?" is left for a tool that could come from several. The attribution relies on the
// lists abox has for the other servers (their narrowing, custom-servers.yaml or the catalog),
// as the allowlist itself does: an Unlisted policy is only run while the gateway serves nothing
// but the project's own servers, so a tool none of them lists is one of the unlisted servers'.
func (m *MCP) Allows(tool string) (server string, ok bool) {
	if s, ok := m.Tools[tool]; ok {
		return s, true
	}
	if !m.Unlisted {
		return "", false
	}
	var bare []string // the unlisted servers without a prefix
	for _, s := range m.UnlistedServers() {
		p, prefixed := m.Prefixes[s]
		switch {
		case prefixed && strings.HasPrefix(tool, p+"__"):
			return s, true
		case !prefixed:
			bare = append(bare, s)
		}
	}
	if len(bare) == 1 {
		return bare[0], true
	}
	return "?", true
}

// UnlistedServers returns the servers netd knows no tool of, in the order of Servers: the
// reason a policy is Unlisted. Every server of a policy that is not Unlisted has a known tool.
func (m *MCP) UnlistedServers() []string {
	known := map[string]bool{}
	for _, s := range m.Tools {
		known[s] = true
	}
	var out []string
	for _, s := range m.Servers {
		if !known[s] {
			out = append(out, s)
		}
	}
	return out
}

// Parse decodes and validates a netd policy. Unknown fields are refused.
func Parse(data []byte) (*Netd, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var p Netd
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("netd policy: %w", err)
	}
	if p.Version != Version {
		return nil, fmt.Errorf("netd policy: version %d, want %d", p.Version, Version)
	}
	if _, err := p.List(); err != nil {
		return nil, fmt.Errorf("netd policy: %w", err)
	}
	if _, err := p.ResolverAddrs(); err != nil {
		return nil, fmt.Errorf("netd policy: %w", err)
	}
	if p.Model != nil {
		if _, err := ModelUpstream(p.Model.Upstream); err != nil {
			return nil, fmt.Errorf("netd policy: %w", err)
		}
	}
	if p.NetdUID < 0 || p.NetdUID > 65535 {
		return nil, fmt.Errorf("netd policy: netd_uid %d outside 1–65535", p.NetdUID)
	}
	if p.LogLimit != 0 && (p.LogLimit < MinLogLimit || p.LogLimit > MaxLogLimit) {
		return nil, fmt.Errorf("netd policy: log limit %d outside %d–%d bytes", p.LogLimit, MinLogLimit, MaxLogLimit)
	}
	return &p, nil
}

// ServingUID is the uid of netd's serving process: NetdUID, or the default [NetdUID].
func (p *Netd) ServingUID() int {
	if p.NetdUID == 0 {
		return NetdUID
	}
	return p.NetdUID
}

// List returns the allowlist the policy describes; in injected-credential mode it withholds the
// model API's host from every entry.
func (p *Netd) List() (*egress.List, error) {
	for _, port := range p.DefaultPorts {
		if port < 1 || port > 65535 {
			return nil, fmt.Errorf("default port %d outside 1–65535", port)
		}
	}
	list, err := egress.ParseList(p.Egress, p.DefaultPorts)
	if err != nil || p.Model == nil {
		return list, err
	}
	// In injected-credential mode the model API's host is netd's alone, whatever the project's
	// entries say (*.anthropic.com for the docs, say): the agent reaches the API through the
	// forwarder only, never with a key of its own.
	u, err := ModelUpstream(p.Model.Upstream)
	if err != nil {
		return nil, err
	}
	return list.Without(u.Hostname()), nil
}

// ModelAddr returns the model upstream's address when the policy names the upstream by an IP
// literal (a gateway without a name); otherwise the zero Addr. [Netd.List] withholds an
// upstream's name from the agent; an address cannot be an allowlist entry, but an allowed name
// can resolve to it, so netd withholds the address itself: it never opens it in the agent's set
// nor dials it for the agent's proxied connections, only for the model forwarder.
func (p *Netd) ModelAddr() netip.Addr {
	if p.Model == nil {
		return netip.Addr{}
	}
	u, err := ModelUpstream(p.Model.Upstream)
	if err != nil {
		return netip.Addr{}
	}
	a, err := netip.ParseAddr(u.Hostname())
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap()
}

// ResolverAddrs parses Resolvers: each must be a public or private IPv4 unicast address with
// port 53, never loopback.
func (p *Netd) ResolverAddrs() ([]netip.AddrPort, error) {
	var out []netip.AddrPort
	for _, r := range p.Resolvers {
		ap, err := netip.ParseAddrPort(r)
		if err != nil {
			return nil, fmt.Errorf("resolver %q: %v", r, err)
		}
		a := ap.Addr()
		if !a.Is4() || !a.IsGlobalUnicast() || a.IsLoopback() || ap.Port() != 53 {
			return nil, fmt.Errorf("resolver %q is not an IPv4 unicast address on port 53", r)
		}
		out = append(out, ap)
	}
	return out, nil
}

// Marshal encodes the policy deterministically, indented, with a trailing newline.
func (p *Netd) Marshal() []byte {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		panic(err) // only plain types: cannot fail
	}
	return append(b, '\n')
}

// Check says whether the policy allows host on port (0: [egress.DefaultPort]), as netd decides
// it, and on which ports it allows host at all. It returns the port checked.
func (p *Netd) Check(host string, port int) (allowed bool, checked int, ports []int, err error) {
	list, err := p.List()
	if err != nil {
		return false, 0, nil, err
	}
	if port == 0 {
		port = egress.DefaultPort
	}
	ports = list.Ports(host)
	return slices.Contains(ports, port), port, ports, nil
}

// IsMandatory reports whether host is an entry abox added to the allowlist itself, which the
// manifest's edits can neither remove nor ignore.
func (p *Netd) IsMandatory(host string) bool { return slices.Contains(p.Mandatory, host) }

// Verdict is `abox egress check`'s answer for one host and port.
type Verdict struct {
	Host    string
	Port    int   // the port checked (the default port when none was asked)
	Allowed bool  // the policy allows Host on Port
	Ports   []int // the ports the policy allows Host on, if any
}

// Verdict checks host on port (0: the default port) as [Netd.Check] does.
func (p *Netd) Verdict(host string, port int) (Verdict, error) {
	ok, port, ports, err := p.Check(host, port)
	return Verdict{Host: host, Port: port, Allowed: ok, Ports: ports}, err
}

// String is the verdict as `abox egress check` prints it.
func (v Verdict) String() string {
	switch {
	case v.Allowed:
		return fmt.Sprintf("allowed: %s:%d", v.Host, v.Port)
	case len(v.Ports) > 0:
		s := make([]string, len(v.Ports))
		for i, n := range v.Ports {
			s[i] = fmt.Sprint(n)
		}
		return fmt.Sprintf("denied: %s:%d (allowed only on port %s)", v.Host, v.Port, strings.Join(s, ", "))
	default:
		return fmt.Sprintf("denied: %s:%d (not in the allowlist)", v.Host, v.Port)
	}
}
