// Package netd is the in-sandbox network daemon: the only way out of a sandbox's network
// namespace.
//
// The agent is treated as hostile, so nothing that enforces its egress may run inside the agent
// container or be changeable from it (DESIGN §2.1). netd runs as the first container of a run and
// owns the namespace; the agent joins it with no capabilities, so the rules netd loads there hold
// even if the agent becomes root.
//
// netd is two processes from one binary:
//
//   - the supervisor ([Main]) runs as root with CAP_NET_ADMIN and opens no connection. It
//     loads the rendered ruleset (policy.RulesFile) atomically with nft, reads the gateway token,
//     opens the decision logs, starts the serving child, self-tests it and prints the one "ready"
//     line the CLI waits for. It adds (address . port) elements to the ruleset's sets only on the
//     child's request, after validating it, and it reloads on SIGHUP. On SIGTERM it stops the
//     child, writes the counters and exits; on SIGUSR1 (policy.FinishSignal, sent once the
//     agent is gone) it does the same but stays up, idle, after a "finished" line, so that abox
//     copies its logs out and removes it after the run's result is printed. It also holds the
//     TLS queue: the first packets of the agent's TLS flows to addresses the child opened, which
//     it judges on the child's decision (the TLS fast path, tlsgate.go) without ever parsing them
//     itself;
//   - the serving child (`netd serve`) runs as policy.NetdUID with no capabilities at all. It
//     serves on loopback only: a DNS resolver that answers only allowed names, a TLS proxy that
//     decides on the ClientHello's server name without terminating TLS, a plain-HTTP proxy that
//     decides on the Host header, and the MCP forwarder that adds the gateway token the agent
//     never sees, narrows the project's tools, and closes at stop the gateway sessions the agent
//     left open.
//
// Whenever netd connects out, it resolves the name itself and dials the address it resolved: the
// agent never chooses an IP. The agent's own TLS connections reach only addresses netd's
// resolver answered for a name allowed on 443 (policy.SetTLS), and only once netd has read the
// ClientHello's server name and allowed it; a TLS connection aimed anywhere else goes to the SNI
// proxy, which dials the name itself. Every decision is logged as JSON lines under policy.LogDir, repeats
// aggregated, up to a cap past which denials are still kept and every loss is counted (logs.go).
// If netd dies, the namespace loses its interfaces and the agent is offline: it fails closed.
//
// # Encrypted ClientHello
//
// A ClientHello can carry another, encrypted one (ECH, RFC 9849): the outer hello names a
// public name, the inner one the server the client wants, and a server that holds the key, as
// CDNs that front many sites do, decrypts the inner hello and serves the server it names. netd
// reads only the outer hello, so the name it would judge is not the name served: fronting (a
// name the allowlist does not have, reached through an allowed one) at the TLS layer. Both
// deciders, the TLS proxy and the fast path's child, therefore refuse a hello that carries any
// extension of an encrypted ClientHello, in any form and position, and log it with its own
// reason (policy.ReasonECH) and the outer name. GREASE ECH (RFC 9849 §6.2), which clients send
// to keep the extension in use, is the same extension with random contents and made to be
// indistinguishable from a real one, so it is refused too. The extensions ([echExtensions]):
//
//   - 0xfe0d encrypted_client_hello and 0xfd00 ech_outer_extensions: RFC 9849 and the IANA
//     TLS ExtensionType registry; the same numbers in drafts 13 to 25 (0xfd00 from draft 08);
//   - 0xfe08 to 0xfe0c: encrypted_client_hello of drafts 08 to 12, and 0xda09 ech_is_inner of
//     drafts 09 and 10;
//   - 0xff02 encrypted_client_hello, 0xff03 ech_nonce and 0xff04 outer_extension of draft 07;
//   - 0xffce encrypted_server_name: ESNI, the design before ECH (drafts 00 to 05;
//     echo_nonce in draft 06), which Firefox and Cloudflare deployed.
//
// The numbers of the drafts are from the history of the draft's own repository
// (github.com/tlswg/draft-ietf-tls-esni), whose tags do not all point at the published texts.
// Clients do not send ECH unless configured to (Go's crypto/tls, Node, curl and Claude Code
// do not by default); Chromium-based browsers send it, GREASE if nothing else, and are refused.
// There is no mode to allow it.
//
// A hello must end with its record (RFC 8446 §5.1), so no second one rides in the first one's
// record. netd reads a connection's first ClientHello only: the second, after a
// HelloRetryRequest, passes unread, and a server must take ECH and the server name from the
// first (RFC 9849 §7.1.1, RFC 8446 §4.1.2), as crypto/tls does (SECURITY.md E40).
//
// # The shared namespace
//
// The agent joins netd's network namespace, so it shares netd's loopback, port space, conntrack
// table and abstract socket names. An agent once used exactly that to answer netd's own upstream
// DNS queries: it bound 127.0.0.11:53 and sent a datagram from there to every ephemeral port of
// 127.0.0.1, so that netd's later query matched the reply direction of a conntrack entry it had
// planted, skipped Docker's DNAT and was delivered to it. Every control here must therefore hold
// against a process of another uid in the same namespace. Mechanism by mechanism:
//
//   - Ports. Docker creates a container's namespace with ip_unprivileged_port_start=0. netd's
//     container sets it to 1024 (policy.UnprivilegedPortSysctl) and the supervisor refuses to
//     serve otherwise ([checkNamespace]), so no uid without CAP_NET_BIND_SERVICE — the agent,
//     root in the agent — can bind port 53, 80 or 443 on any address (127.0.0.11, 127.0.0.1,
//     0.0.0.0, the container's own). netd's own ports are above 1024 but are bound before the
//     agent exists and held for netd's life (its child's death ends netd); SO_REUSEADDR does not
//     let a second socket share a listening TCP port or an unshared UDP one, and SO_REUSEPORT
//     groups only sockets of one uid. The ruleset also refuses any packet of another uid from
//     netd's ports.
//   - Conntrack. Every flow is marked, with its first packet, by who opened it (netd's uid, or
//     another uid but root), and before conntrack's "established" can accept anything a packet
//     sent by the wrong side of its flow is dropped: another uid in a flow netd opened (the
//     five-tuple of a finished query of netd's, whose entry outlives its socket), anyone but
//     root (Docker's resolver) answering netd on loopback (a reply forged with IP_PKTINFO from
//     127.0.0.11 and Docker's port, spraying every DNS id), and netd or root sending in a flow
//     the agent opened (a planted entry that would carry netd's query back into netd, or
//     Docker's forwarding elsewhere). New flows from 127.0.0.11 and from netd's ports are
//     refused besides, and the agent cannot bind port 53. The agent cannot read or change
//     conntrack either: ctnetlink needs CAP_NET_ADMIN for every request and its event groups.
//   - Source addresses. Sending from an address that is not the namespace's own needs
//     IP_TRANSPARENT (CAP_NET_ADMIN); IP_FREEBIND lets a socket bind one but not send from it.
//     Raw and packet sockets need CAP_NET_RAW, so the agent can neither forge a reply to netd nor
//     an ICMP error against its flows (ping sockets send echo requests only). netd's UDP queries
//     are connected sockets, which take datagrams only from the server they asked, and each
//     answer must carry the query's id and question.
//   - Names. netd never asks where the gateway is: abox reads the gateway container's address
//     on the network from Docker for every run and passes it with --gateway-addr; the MCP
//     forwarder dials exactly that and so sends the token to no other peer. What a name
//     resolves to is checked before netd connects to it or opens it for the agent
//     ([destinationCheck]): never loopback, link-local, multicast, broadcast, this network, the
//     namespace's own addresses (where the agent listens) or the gateway's.
//   - Sets. Only the supervisor writes them, on the child's validated requests, within budgets
//     (64 addresses per name and set, 8,192 elements per set, far below the kernel set's
//     65,536), so the agent cannot fill them to deny netd its own openings (the resolvers and
//     the gateway, opened by the supervisor itself) nor widen anything beyond its names; netd
//     opens an address it dials alone and for 30 s, conntrack carrying the connection after. A
//     pair `abox egress rm` revokes moves to policy.SetRevoked, where even established flows of
//     the agent are reset, as the proxies close their tunnels and HTTP exchanges to the name.
//   - Unix sockets. netd listens on none, abstract or not; the supervisor and its child talk
//     over an unnamed socketpair.
//
// # What the model API fetches
//
// In injected-credential mode the model forwarder spends the user's credential on the agent's
// requests, and the Messages API does more with a request than generate: its own servers fetch
// and read what some fields name, from hosts past abox's allowlist and out of netd's sight (a
// URL carrying the workspace in its query is an exfiltration). Unless
// claude_code.server_tools: allow, netd refuses, in the body of every request it forwards
// (/v1/messages, /v1/messages/count_tokens, any path added later; modelbody.go and
// modelfetch.go), each of these, as the API documents them (its docs at platform.claude.com and
// docs.anthropic.com, and the types of its official TypeScript SDK, anthropic-sdk-typescript's
// src/resources/beta/messages/messages.ts, read in August 2026):
//
//   - an image or document source of type "url" (URLImageSource, URLPDFSource): the API fetches
//     the URL. build-with-claude/vision ("a URL reference to an image hosted online", one of
//     three source types) and build-with-claude/pdf-support;
//   - a source of type "file" (FileImageSource, FileDocumentSource) and a container_upload
//     block: the API reads a file stored with the Files API by its file_id, which netd never
//     saw (another of the organisation's files, say), into the conversation or into the code
//     execution container. build-with-claude/files ("refer to an uploaded file by its file_id
//     in a document, image or container_upload block");
//   - any image or document source whose type is not one carried in the body (base64, text,
//     content), so that the next source type the API adds is refused until it is read;
//   - mcp_servers (entries of type "url", an authorization_token) and the mcp_toolset tools
//     and tool_addition blocks that use them: the API's servers connect to the remote MCP
//     servers. agents-and-tools/mcp-connector (betas mcp-client-2025-04-04, -2025-11-20);
//   - tools of any type but custom (web_search_*, web_fetch_*, code_execution_*, the tool
//     search, advisor, browser and computer toolsets, and whatever comes next):
//     agents-and-tools/tool-use/web-fetch-tool ("the API retrieves the full text content from
//     the specified URL"), web-search-tool, code-execution-tool;
//   - container (an earlier code execution container by id, or skills loaded into one):
//     build-with-claude/skills-guide ("you specify Skills in the container parameter");
//   - the blocks server tools leave in a conversation (server_tool_use, web_search_tool_result,
//     web_fetch_tool_result, *code_execution_tool_result, mcp_tool_use, mcp_tool_result, …):
//     they exist only where server tools ran, and a server_tool_use left at the end of a turn
//     may be carried on by the API (pause_turn, code-execution-tool).
//
// Not refused, because the API reads them from the body and fetches nothing: base64 image and
// PDF data (whatever URL its bytes or a PDF's links spell), text and content document sources,
// a search_result block's source (a string the API only cites: build-with-claude/search-results),
// URLs in text, tool inputs and schemas. The anthropic-beta header passes: every fetch a beta
// turns on (files-api, mcp-client, web-fetch, code-execution, skills) needs one of the fields
// above, which is refused whatever the betas say.
//
// The walk (modelfetch.go) reads the whole body, not fixed paths, and reads it as a lenient
// parser might: a block's type is looked for under any key that reads "type" once lower-cased
// and stripped of all but letters, and its value compared the same way, so "URL", "\u0075rl"
// and "u r l" are all "url". A body with the same key twice in any object is refused outright
// (encoding/json keeps the last, other parsers the first or fail; refusing every duplicate
// leaves no reading to choose), as is one that is not UTF-8 JSON, nests past 512 levels, or
// spells a top-level member in another case. Bodies are bounded already (32 MiB, C17) and read
// in place. The price: a tool input of the agent's own tools that says {"type": "url"} is
// refused too, which no tool of Claude Code's does.
package netd
