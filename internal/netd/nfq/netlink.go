package nfq

import (
	"encoding/binary"
	"errors"
)

// The constants below are the kernel's, from its uapi headers: linux/netlink.h,
// linux/netfilter/nfnetlink.h and linux/netfilter/nfnetlink_queue.h. They are written out here
// rather than taken from x/sys/unix so that the encoding builds and is tested on every OS.
const (
	nlmsgHdrLen = 16 // struct nlmsghdr: len u32, type u16, flags u16, seq u32, pid u32
	nfgenHdrLen = 4  // struct nfgenmsg: family u8, version u8, res_id __be16
	nlaHdrLen   = 4  // struct nlattr: len u16, type u16
	nlaAlign    = 4  // NLA_ALIGNTO, and NLMSG_ALIGNTO too

	nlmsgError = 2 // NLMSG_ERROR: an ack (error 0) or a failed request

	nlmFRequest = 0x1 // NLM_F_REQUEST
	nlmFAck     = 0x4 // NLM_F_ACK

	nlaTypeMask = 0x3fff // strips NLA_F_NESTED and NLA_F_NET_BYTEORDER

	afUnspec = 0
	afInet   = 2

	nfnlSubsysQueue = 3 // NFNL_SUBSYS_QUEUE: the high byte of an nfnetlink message type
)

// Message types (enum nfqnl_msg_types), attributes of a packet or verdict (enum
// nfqnl_attr_type) and of a config message (enum nfqnl_attr_config).
const (
	msgPacket  = nfnlSubsysQueue << 8   // NFQNL_MSG_PACKET (0)
	msgVerdict = nfnlSubsysQueue<<8 | 1 // NFQNL_MSG_VERDICT
	msgConfig  = nfnlSubsysQueue<<8 | 2 // NFQNL_MSG_CONFIG

	attrPacketHdr  = 1  // NFQA_PACKET_HDR: struct nfqnl_msg_packet_hdr
	attrVerdictHdr = 2  // NFQA_VERDICT_HDR: struct nfqnl_msg_verdict_hdr
	attrMark       = 3  // NFQA_MARK: __be32
	attrPayload    = 10 // NFQA_PAYLOAD: the packet from its network header
	attrCapLen     = 13 // NFQA_CAP_LEN: __be32, sent only when the payload was cut short
	attrSkbInfo    = 14 // NFQA_SKB_INFO: __be32 NFQA_SKB_* flags
	attrMax        = 31 // attributes above are ignored

	cfgAttrCmd    = 1 // NFQA_CFG_CMD: struct nfqnl_msg_config_cmd
	cfgAttrParams = 2 // NFQA_CFG_PARAMS: struct nfqnl_msg_config_params
	cfgAttrMaxLen = 3 // NFQA_CFG_QUEUE_MAXLEN: __be32
	cfgAttrMask   = 4 // NFQA_CFG_MASK: __be32, the flags being changed
	cfgAttrFlags  = 5 // NFQA_CFG_FLAGS: __be32, their values
)

// Config commands, copy mode and flags.
const (
	cmdBind     = 1 // NFQNL_CFG_CMD_BIND
	cmdPFBind   = 3 // NFQNL_CFG_CMD_PF_BIND: needed before Linux 3.8, ignored since
	cmdPFUnbind = 4 // NFQNL_CFG_CMD_PF_UNBIND: likewise

	copyPacket = 2      // NFQNL_COPY_PACKET
	copyRange  = 0xffff // NFQNL_MAX_COPY_RANGE: the whole of any IPv4 packet

	flagFailOpen = 1 << 0 // NFQA_CFG_F_FAIL_OPEN: accept when the queue is full. Never set.
	flagGSO      = 1 << 2 // NFQA_CFG_F_GSO: hand over GSO packets whole, not segmented

	skbInfoGSO = 1 << 1 // NFQA_SKB_GSO: the packet is larger than the device's MTU
)

// Verdicts (linux/netfilter.h).
const (
	verdictDrop   = 0 // NF_DROP
	verdictAccept = 1 // NF_ACCEPT
	verdictRepeat = 4 // NF_REPEAT: run the hook's chain again, from its start
)

// Packet is one packet the kernel queued, awaiting exactly one verdict.
type Packet struct {
	ID         uint32 // names the packet in its verdict
	HWProtocol uint16 // the ethertype: 0x0800 for IPv4
	Hook       uint8  // the netfilter hook it was queued from: 3 is output (NF_INET_LOCAL_OUT)
	Mark       uint32 // the packet mark (0 when the kernel sends none)
	GSO        bool   // a GSO packet, larger than one segment on the wire
	CapLen     uint32 // the packet's whole length when Payload was cut short; 0 otherwise
	Payload    []byte // the packet from its IP header on; parse it with [ParseSegment]
}

// errShort is a netlink message or attribute shorter than its own header says.
var errShort = errors.New("nfq: truncated netlink message")

// nlmsg is one received netlink message: its header and what follows it.
type nlmsg struct {
	typ, flags uint16
	seq, pid   uint32
	data       []byte
}

// align rounds n up to the netlink alignment.
func align(n int) int { return (n + nlaAlign - 1) &^ (nlaAlign - 1) }

// builder builds one netlink message: header, nfgenmsg, attributes. The header's length is
// filled in by bytes.
type builder struct{ b []byte }

// newBuilder starts a message of type typ for the given family and queue number.
func newBuilder(typ, flags uint16, seq uint32, family uint8, queue uint16) *builder {
	b := make([]byte, nlmsgHdrLen, 64)
	binary.NativeEndian.PutUint16(b[4:], typ)
	binary.NativeEndian.PutUint16(b[6:], flags|nlmFRequest)
	binary.NativeEndian.PutUint32(b[8:], seq)
	// The pid is left 0: the kernel fills in the sender's port id.
	b = append(b, family, 0) // family, NFNETLINK_V0
	b = binary.BigEndian.AppendUint16(b, queue)
	return &builder{b: b}
}

// attr appends one attribute, padded to the netlink alignment. Its length field excludes the
// padding, as the kernel's nla_put does.
func (m *builder) attr(typ uint16, data []byte) {
	m.b = binary.NativeEndian.AppendUint16(m.b, uint16(nlaHdrLen+len(data)))
	m.b = binary.NativeEndian.AppendUint16(m.b, typ)
	m.b = append(m.b, data...)
	m.b = append(m.b, make([]byte, align(len(data))-len(data))...)
}

// be32 appends an attribute holding one big-endian 32-bit value.
func (m *builder) be32(typ uint16, v uint32) { m.attr(typ, binary.BigEndian.AppendUint32(nil, v)) }

// bytes returns the finished message.
func (m *builder) bytes() []byte {
	binary.NativeEndian.PutUint32(m.b[0:], uint32(len(m.b)))
	return m.b
}

// cmdMessage is a config message carrying one command for family AF_INET, asking for an ack.
func cmdMessage(seq uint32, queue uint16, cmd uint8) []byte {
	m := newBuilder(msgConfig, nlmFAck, seq, afInet, queue)
	m.attr(cfgAttrCmd, []byte{cmd, 0, 0, afInet}) // command, pad, pf (__be16)
	return m.bytes()
}

// bindMessage binds queue to this socket and configures it in one request, so that the queue
// never exists with other settings: whole packets, maxLen of them held at most, GSO packets
// whole, and fail-open explicitly cleared.
func bindMessage(seq uint32, queue uint16, maxLen uint32) []byte {
	m := newBuilder(msgConfig, nlmFAck, seq, afInet, queue)
	m.attr(cfgAttrCmd, []byte{cmdBind, 0, 0, afInet})
	params := binary.BigEndian.AppendUint32(nil, copyRange) // struct nfqnl_msg_config_params,
	m.attr(cfgAttrParams, append(params, copyPacket))       // packed: 5 bytes
	m.be32(cfgAttrMaxLen, maxLen)
	m.be32(cfgAttrMask, flagFailOpen|flagGSO)
	m.be32(cfgAttrFlags, flagGSO)
	return m.bytes()
}

// verdictMessage gives packet id of queue the verdict v and, when setMark, the packet mark.
// It asks for no ack: the kernel reports a failed verdict anyway, as an NLMSG_ERROR that
// [Queue.Recv] counts.
func verdictMessage(seq uint32, queue uint16, id, v uint32, mark uint32, setMark bool) []byte {
	return verdictPayloadMessage(seq, queue, id, v, mark, setMark, nil)
}

// verdictPayloadMessage is [verdictMessage] with, when payload is not nil, the packet the kernel
// sends on in place of the one it queued (NFQA_PAYLOAD), from its IP header on.
func verdictPayloadMessage(seq uint32, queue uint16, id, v uint32, mark uint32, setMark bool, payload []byte) []byte {
	m := newBuilder(msgVerdict, 0, seq, afUnspec, queue)
	hdr := binary.BigEndian.AppendUint32(nil, v) // struct nfqnl_msg_verdict_hdr
	m.attr(attrVerdictHdr, binary.BigEndian.AppendUint32(hdr, id))
	if setMark {
		m.be32(attrMark, mark)
	}
	if payload != nil {
		m.attr(attrPayload, payload)
	}
	return m.bytes()
}

// splitMessages splits a received datagram into its netlink messages.
func splitMessages(b []byte) ([]nlmsg, error) {
	var out []nlmsg
	for len(b) > 0 {
		if len(b) < nlmsgHdrLen {
			return out, errShort
		}
		n := int(binary.NativeEndian.Uint32(b))
		if n < nlmsgHdrLen || n > len(b) {
			return out, errShort
		}
		out = append(out, nlmsg{
			typ:   binary.NativeEndian.Uint16(b[4:]),
			flags: binary.NativeEndian.Uint16(b[6:]),
			seq:   binary.NativeEndian.Uint32(b[8:]),
			pid:   binary.NativeEndian.Uint32(b[12:]),
			data:  b[nlmsgHdrLen:n],
		})
		b = b[min(align(n), len(b)):]
	}
	return out, nil
}

// parseAttrs indexes the attributes in b by type. A later duplicate wins, as in the kernel's
// nla_parse; types above attrMax are skipped.
func parseAttrs(b []byte) ([attrMax + 1][]byte, error) {
	var attrs [attrMax + 1][]byte
	for len(b) > 0 {
		if len(b) < nlaHdrLen {
			return attrs, errShort
		}
		n := int(binary.NativeEndian.Uint16(b))
		if n < nlaHdrLen || n > len(b) {
			return attrs, errShort
		}
		if typ := binary.NativeEndian.Uint16(b[2:]) & nlaTypeMask; typ <= attrMax {
			attrs[typ] = b[nlaHdrLen:n]
		}
		b = b[min(align(n), len(b)):]
	}
	return attrs, nil
}

// decodePacket decodes the body of an NFQNL_MSG_PACKET (after its nlmsghdr). The payload is
// copied, so the packet outlives the receive buffer.
func decodePacket(data []byte) (Packet, error) {
	if len(data) < nfgenHdrLen {
		return Packet{}, errShort
	}
	attrs, err := parseAttrs(data[nfgenHdrLen:])
	if err != nil {
		return Packet{}, err
	}
	hdr := attrs[attrPacketHdr] // __be32 packet_id, __be16 hw_protocol, __u8 hook: 7 bytes
	if len(hdr) < 7 {
		return Packet{}, errors.New("nfq: packet without its header attribute")
	}
	p := Packet{
		ID:         binary.BigEndian.Uint32(hdr),
		HWProtocol: binary.BigEndian.Uint16(hdr[4:]),
		Hook:       hdr[6],
		Mark:       be32(attrs[attrMark]),
		CapLen:     be32(attrs[attrCapLen]),
		GSO:        be32(attrs[attrSkbInfo])&skbInfoGSO != 0,
	}
	if pl := attrs[attrPayload]; pl != nil {
		p.Payload = append([]byte{}, pl...)
	}
	return p, nil
}

// be32 reads a big-endian 32-bit attribute; a missing or short one reads as 0.
func be32(b []byte) uint32 {
	if len(b) < 4 {
		return 0
	}
	return binary.BigEndian.Uint32(b)
}

// decodeError returns the code an NLMSG_ERROR carries: 0 for an ack, else a positive errno.
func decodeError(data []byte) (int32, error) {
	if len(data) < 4 {
		return 0, errShort
	}
	// struct nlmsgerr opens with a host-endian int: 0 or a negative errno.
	return -int32(binary.NativeEndian.Uint32(data)), nil
}
