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
//
// The TLS fast path (the netd package doc): the first packet of a flow of another uid but root
// to an (address . 443) of [SetTLS] marks the flow held ([MarkTLSHeld]) in the mark chain, which
// runs right after conntrack has found the packet's flow (priority -180; conntrack's is -200) and
// before everything else; the nat chain then leaves it alone, and [QueueRules] sends each of its
// packets to [TLSQueue], where netd's supervisor holds them until it has the ClientHello and a
// decision. A packet comes back with a verdict mark: allowed pins the flow ([MarkTLSPinned]: its
// outgoing packets still go through the queue, and its incoming ones too, until the server has
// acknowledged the hello, then [VerdictFinal] marks it allowed and the kernel carries it,
// "established"); a packet judged on its own passes with the flow as it was; refused marks it
// [MarkTLSRefused] and resets it. A packet of a held or pinned flow that reaches the output
// chain without a verdict mark (the queue rule gone) is dropped, and only a held or pinned flow
// can be moved on by a verdict mark: the queue rules, the only rules outside this table, can
// hold packets but never pass one. The rules that reset or drop a refused or unjudged flow look
// at its original direction only: the reset a reject sends the agent belongs to the flow's reply
// direction, and must get out.
func Ruleset(netdUID int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, rulesetTemplate, Table, SetAgent, SetNetd, setSize, netdUID, DNSPort, SNIPort, HTTPPort, SetRevoked, MCPPort, NetdSource, ModelPort,
		SetTLS, SetRevokedFlow)
	return b.Bytes()
}

// QueueRules is the iptables-nft-restore input netd loads after [Ruleset] ([QueueFile]): the
// rule that sends the packets of held TLS flows, which no verdict has marked yet, to [TLSQueue].
// It is the one rule not in table inet abox, because nft's own queue statement is missing from
// some kernels (nft_queue) where iptables' NFQUEUE target is not; it lives in table ip mangle, whose
// output chain runs after the mark chain and before the rest. An NF_REPEAT verdict runs that
// chain again, and a packet carrying a verdict mark is not queued twice.
func QueueRules() []byte {
	return []byte(fmt.Sprintf(queueTemplate, MarkTLSQueue, MarkTLSPinned&^MarkTLSQueue, TLSQueue))
}

// setSize bounds each set, so a flood of resolved addresses cannot grow kernel memory unbounded.
// netd's own budgets ([netd]) stay well below it, so a set is never full.
const setSize = 65536

const queueTemplate = `# netqueue.rules: loaded by netd with iptables-nft-restore after netpolicy.nft. The packets of
# an agent's TLS flow held for its server name, or pinned until the server has its hello
# (connection mark bit 0x%x), that carry no verdict yet go to queue %[3]d, where netd's
# supervisor judges them; so do the incoming packets of a pinned flow (bit 0x%[2]x), which say
# when the hello was acknowledged.
*mangle
:INPUT ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
-A INPUT -m connmark --mark 0x%[2]x/0x%[2]x -m mark --mark 0x0 -j NFQUEUE --queue-num %[3]d
-A OUTPUT -m connmark --mark 0x%[1]x/0x%[1]x -m mark --mark 0x0 -j NFQUEUE --queue-num %[3]d
COMMIT
`

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

	set %[13]s {
		type ipv4_addr . inet_service
		size %[4]d
		flags timeout
	}

	set %[14]s {
		type ipv4_addr . inet_service . ipv4_addr . inet_service
		size %[4]d
		flags timeout
	}

	chain mark_output {
		type filter hook output priority -180; policy accept;
		ct status ! confirmed meta skuid %[5]d counter ct mark set 0x00000990 comment "netd's new flow"
		ct status ! confirmed meta skuid != 0 meta skuid != %[5]d counter ct mark set 0x00000001 comment "another uid's new flow"
		ct status ! confirmed ct mark 0x00000001 ip daddr . tcp dport @%[13]s counter ct mark set 0x00010001 comment "tls to a resolved address, held for its server name"
	}

	chain nat_output {
		type nat hook output priority -110; policy accept;
		meta skuid 0 ip daddr != 127.0.0.0/8 udp dport 53 counter accept comment "docker dns forwarding not redirected"
		meta skuid 0 ip daddr != 127.0.0.0/8 tcp dport 53 counter accept comment "docker dns forwarding over tcp not redirected"
		meta nfproto ipv4 meta skuid != %[5]d udp dport 53 counter redirect to :%[6]d comment "dns to netd"
		meta nfproto ipv4 meta skuid != %[5]d tcp dport 53 counter redirect to :%[6]d comment "dns over tcp to netd"
		ct mark 0x00010001 counter accept comment "held tls not redirected"
		meta nfproto ipv4 meta skuid != %[5]d tcp dport 443 counter redirect to :%[7]d comment "tls to netd"
		meta nfproto ipv4 meta skuid != %[5]d tcp dport 80 counter redirect to :%[8]d comment "http to netd"
	}

	chain output {
		type filter hook output priority 0; policy drop;
		meta skuid != %[5]d ip daddr . tcp dport @%[9]s counter reject with tcp reset comment "revoked"
		ip saddr . tcp sport . ip daddr . tcp dport @%[14]s counter reject with tcp reset comment "revoked tls flow"
		ip saddr %[11]s meta skuid != %[5]d counter drop comment "netd's source address, another sender"
		ct mark 0x00000990 ct direction original meta skuid != %[5]d counter drop comment "netd's flow, another sender"
		ct mark 0x00000990 ct direction reply meta skuid != 0 counter drop comment "netd's flow, a forged reply"
		ct mark & 0x0000ffff == 0x00000001 ct direction original meta skuid 0 counter drop comment "another uid's flow, root sending"
		ct mark & 0x0000ffff == 0x00000001 ct direction original meta skuid %[5]d counter drop comment "another uid's flow, netd sending"
		ct mark { 0x00010001, 0x00050001 } meta mark 0x00000a11 counter ct mark set 0x00050001 meta mark set 0x00000000 accept comment "tls server name allowed"
		ct mark { 0x00010001, 0x00050001 } meta mark 0x00000a10 counter meta mark set 0x00000000 accept comment "tls held or pinned, a packet judged"
		meta l4proto tcp ct mark { 0x00010001, 0x00050001 } meta mark 0x00000de1 counter ct mark set 0x00080001 reject with tcp reset comment "tls server name refused"
		meta l4proto tcp ct direction original ct mark 0x00080001 counter reject with tcp reset comment "tls flow refused"
		ct direction original ct mark { 0x00010001, 0x00050001 } counter drop comment "tls held or pinned, not judged"
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
		ip daddr . tcp dport . ip saddr . tcp sport @%[14]s counter drop comment "in revoked tls flow"
		ct mark 0x00050001 meta mark 0x00000a12 counter ct mark set 0x00020001 meta mark set 0x00000000 accept comment "in tls hello acknowledged"
		ct mark 0x00050001 meta mark 0x00000a10 counter meta mark set 0x00000000 accept comment "in tls pinned, a packet judged"
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
