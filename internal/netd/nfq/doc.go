// Package nfq is a minimal NFQUEUE client: it receives the packets a ruleset's `queue num N`
// rule sends to userspace and gives each one a verdict.
//
// netd uses it to decide a TLS flow without proxying it. A connection to an address netd's
// resolver handed out for an allowed name goes straight through the kernel; only its first
// packets (the SYN and the client's first flight, up to the end of the ClientHello) are queued.
// The root supervisor reads the server name from them and answers with [Queue.Repeat] and a
// packet mark the ruleset turns into a conntrack mark (allowed: once the server has the hello,
// the flow's later packets are never queued again) or a TCP reset (refused); [Queue.RepeatWith]
// also puts the bytes it judged in place of the packet's, and [Conntrack] tells it whether a
// flow it allowed is still open. Everything past the decision is the kernel's,
// which is why a queued flow keeps nearly the throughput of a direct one, unlike a second TCP
// connection through a proxy.
//
// # Failing closed
//
// A queued packet that nobody decides is dropped, never let through:
//
//   - the queue is bound without NFQA_CFG_F_FAIL_OPEN, so a full queue drops new packets
//     instead of accepting them, and the ruleset's queue rule must not carry `bypass`, so a
//     queue with no listener drops too;
//   - when the socket's receive buffer overflows, the kernel drops the packet it could not
//     deliver and recvmsg reports ENOBUFS once; [Queue.Recv] counts that ([Stats].Overruns)
//     and goes on, so the loss is visible but never turns into an accept;
//   - closing the socket (or the process dying) unbinds the queue, and the kernel drops every
//     packet still awaiting a verdict.
//
// # Layout
//
// netlink.go encodes and decodes the nfnetlink_queue messages, from the facts of the kernel's
// uapi headers (linux/netfilter/nfnetlink.h and nfnetlink_queue.h); it is pure and tested on
// every OS. segment.go parses a queued IPv4 packet's TCP header and computes its checksum.
// queue_linux.go owns the socket; queue_other.go refuses to open one elsewhere. conntrack.go
// encodes ctnetlink's lookup of one flow and decodes the answer; conntrack_linux.go owns its
// socket, conntrack_other.go refuses one elsewhere.
package nfq
