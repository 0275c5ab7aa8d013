package policy

import (
	"bytes"
	"fmt"
)

// Ruleset returns the nftables ruleset netd loads with `nft -f`, for netd's serving process
// running as netdUID ([NetdUIDFor]): the rendered artifact [RulesFile]. It is pure, so the CLI,
// netd and doctor agree on it byte for byte.
//
// The file holds one table, inet [Table], and never flushes the whole ruleset: Docker's embedded
// resolver lives in the container's ip nat table (127.0.0.11 DNATed to a random port), and
// flushing it would break name resolution for netd itself. The first two commands are the atomic
// replace idiom that works with nft 1.0.6 (Debian 12), which has no "destroy": declaring the table
// makes the "delete" valid whether or not the table existed, and the whole file is one
// transaction, so there is no moment without the policy.
//
// In words (DESIGN §2.2):
//   - nat output, at priority -110 so it runs before Docker's DNAT of 127.0.0.11 at -100: every
//     uid but [NetdUID] has its DNS (udp and tcp 53, whatever the address) redirected to netd's
//     resolver, tcp/443 to the SNI proxy and tcp/80 to the HTTP proxy; except root's DNS to a
//     non-loopback address, see below;
//   - filter output, policy drop: first, for every uid but netd's, the TCP flows of [SetRevoked]
//     are reset even when established (`abox egress rm` cuts a non-TLS connection at once);
//     then established/related accepted; 127.0.0.11 refused as a source for everyone and as a
//     destination for every uid but netd's; netd's ports refused as a source for every other
//     uid; the rest of 127.0.0.0/8 accepted, matched on the address because after a nat redirect
//     oif is still the original route's device; netd's uid to the addresses it resolved itself
//     ([SetNetd]); any uid to the non-TLS ports of allowed names ([SetAgent]); IPv6 beyond ::1
//     and everything else rejected (TCP reset or ICMP admin-prohibited), so a blocked
//     connection fails at once;
//   - filter input and forward, policy drop: only replies and loopback come in, so peers on the
//     bridge cannot connect to anything in the namespace; replies of revoked flows are dropped.
//
// The agent shares this namespace, so the rules that keep netd's own traffic out of its reach
// are as much a part of the policy as the allowlist (the netd package doc has the whole
// argument). Those that live here:
//   - every flow is marked, with its first packet, by who opened it: netd's uid (0x990), or any
//     other uid but root (0x1). Then, before "established" can accept anything, a packet of a
//     flow is dropped when the wrong side sends it: another uid in a flow netd opened (reusing
//     the five-tuple of a finished query of netd's, whose conntrack entry outlives it), anyone
//     but root (Docker's resolver) answering netd on loopback (a reply forged with IP_PKTINFO
//     from 127.0.0.11 and Docker's port), and netd or root sending in a flow another uid
//     opened (a planted entry that would carry netd's query, or Docker's forwarding, somewhere
//     the agent chose). Conntrack state is thus never a way into netd's flows, whatever the
//     agent plants or waits for;
//   - netd asks Docker's resolver from [NetdSource], which nobody else may send from, so no
//     flow of another uid can have the five-tuple of netd's queries at all;
//   - a new flow from 127.0.0.11 is refused (only the replies of netd's own flows to Docker's
//     resolver carry that source), and nobody but netd sends from netd's ports.
//
// Docker's embedded resolver answers container names itself but forwards every other name to
// the host's resolvers from inside the container's namespace, as root. Redirected to netd, that
// forwarded query would come back to netd, which asked 127.0.0.11 again: a loop. So uid 0's DNS
// to a non-loopback address is not redirected — and then refused, at once, like anything else:
// root in the namespace (the agent, if it ever became root) cannot send DNS anywhere. Docker
// answers SERVFAIL quickly, and netd asks the host's resolvers ([Netd.Resolvers]) itself, from
// its own uid, through [SetNetd] (UDP and TCP).
//
// Every verdict is counted and carries a unique comment, which is how [ParseCounters] names it.
// Sets hold (IPv4 address . port) pairs with a timeout; netd adds them, nothing else does. The
// agent's set opens TCP only; netd's set opens TCP and UDP (DNS to the host's resolvers, the
// gateway).
func Ruleset(netdUID int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, rulesetTemplate, Table, SetAgent, SetNetd, setSize, netdUID, DNSPort, SNIPort, HTTPPort, SetRevoked, MCPPort, NetdSource, ModelPort)
	return b.Bytes()
}

// setSize bounds each set, so a flood of resolved addresses cannot grow kernel memory unbounded.
// netd's own budgets ([netd]) stay well below it, so a set is never full.
const setSize = 65536

// rulesetTemplate is written the way `nft list` prints it, so the rendered file and a listing of
// the live table read the same. Its indexed verbs are, in order: table, agent set, netd set, set
// size, netd uid, DNS, SNI and HTTP ports, revoked set, MCP port, netd's source address, model port.
const rulesetTemplate = `# netpolicy.nft: the sandbox's network policy, rendered by abox and loaded by netd with nft -f.
# One transaction: declare, delete and recreate table inet %[1]s; Docker's own nat rules for
# its embedded resolver (127.0.0.11) in other tables are left alone.
table inet %[1]s
delete table inet %[1]s

table inet %[1]s {
	set %[2]s {
		type ipv4_addr . inet_service
		size %[4]d
		flags timeout
	}

	set %[3]s {
		type ipv4_addr . inet_service
		size %[4]d
		flags timeout
	}

	set %[9]s {
		type ipv4_addr . inet_service
		size %[4]d
		flags timeout
	}

	chain nat_output {
		type nat hook output priority -110; policy accept;
		meta skuid 0 ip daddr != 127.0.0.0/8 udp dport 53 counter accept comment "docker dns forwarding not redirected"
		meta skuid 0 ip daddr != 127.0.0.0/8 tcp dport 53 counter accept comment "docker dns forwarding over tcp not redirected"
		meta nfproto ipv4 meta skuid != %[5]d udp dport 53 counter redirect to :%[6]d comment "dns to netd"
		meta nfproto ipv4 meta skuid != %[5]d tcp dport 53 counter redirect to :%[6]d comment "dns over tcp to netd"
		meta nfproto ipv4 meta skuid != %[5]d tcp dport 443 counter redirect to :%[7]d comment "tls to netd"
		meta nfproto ipv4 meta skuid != %[5]d tcp dport 80 counter redirect to :%[8]d comment "http to netd"
	}

	chain output {
		type filter hook output priority 0; policy drop;
		meta skuid != %[5]d ip daddr . tcp dport @%[9]s counter reject with tcp reset comment "revoked"
		ip saddr %[11]s meta skuid != %[5]d counter drop comment "netd's source address, another sender"
		ct status ! confirmed meta skuid %[5]d counter ct mark set 0x990 comment "netd's new flow"
		ct status ! confirmed meta skuid != 0 meta skuid != %[5]d counter ct mark set 0x1 comment "another uid's new flow"
		ct mark 0x990 ct direction original meta skuid != %[5]d counter drop comment "netd's flow, another sender"
		ct mark 0x990 ct direction reply meta skuid != 0 counter drop comment "netd's flow, a forged reply"
		ct mark 0x1 ct direction original meta skuid 0 counter drop comment "another uid's flow, root sending"
		ct mark 0x1 ct direction original meta skuid %[5]d counter drop comment "another uid's flow, netd sending"
		ct state established,related counter accept comment "established"
		ct state invalid counter drop comment "invalid"
		ip saddr 127.0.0.11 counter reject with icmpx type admin-prohibited comment "docker dns as a source refused"
		meta skuid != %[5]d meta l4proto { tcp, udp } th sport { %[6]d, %[7]d, %[8]d, %[10]d, %[12]d } counter reject with icmpx type admin-prohibited comment "netd ports as a source refused"
		ip daddr 127.0.0.11 meta skuid %[5]d counter accept comment "netd to docker dns"
		ip daddr 127.0.0.11 meta l4proto tcp counter reject with tcp reset comment "docker dns refused tcp"
		ip daddr 127.0.0.11 counter reject with icmpx type admin-prohibited comment "docker dns refused"
		ip daddr 127.0.0.0/8 counter accept comment "loopback"
		ip6 daddr ::1 counter accept comment "loopback ipv6"
		meta skuid %[5]d ip daddr . tcp dport @%[3]s counter accept comment "netd upstream"
		meta skuid %[5]d ip daddr . udp dport @%[3]s counter accept comment "netd upstream udp"
		ip daddr . tcp dport @%[2]s counter accept comment "allowed non-tls port"
		meta nfproto ipv6 counter reject with icmpx type admin-prohibited comment "ipv6 refused"
		meta l4proto tcp counter reject with tcp reset comment "refused tcp"
		counter reject with icmpx type admin-prohibited comment "refused"
	}

	chain input {
		type filter hook input priority 0; policy drop;
		ip saddr . tcp sport @%[9]s counter drop comment "in revoked"
		ct state established,related counter accept comment "in established"
		iif "lo" counter accept comment "in loopback"
		counter drop comment "in refused"
	}

	chain forward {
		type filter hook forward priority 0; policy drop;
		counter drop comment "forward refused"
	}
}
`
