package nfq

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"syscall"
)

// The conntrack half of the package: netd's supervisor asks the kernel whether a TCP flow it
// decided still has a conntrack entry, and what that entry's mark is. The constants are the
// kernel's, from linux/netfilter/nfnetlink.h and linux/netfilter/nfnetlink_conntrack.h, written
// out for the same reason as netlink.go's: the encoding builds and is tested on every OS.
const (
	nfnlSubsysCtnetlink = 1 // NFNL_SUBSYS_CTNETLINK

	// A get is an IPCTNL_MSG_CT_GET; the kernel answers with the entry as an IPCTNL_MSG_CT_NEW
	// (Linux 6.18 does). An answer of the request's own type is taken as the same: the kernel's
	// get handler passes that type on to the code that fills in the answer.
	ctMsgNew = nfnlSubsysCtnetlink << 8   // IPCTNL_MSG_CT_NEW
	ctMsgGet = nfnlSubsysCtnetlink<<8 | 1 // IPCTNL_MSG_CT_GET

	nlaFNested = 1 << 15 // NLA_F_NESTED: the attribute holds attributes

	ipprotoTCP = 6
	enoent     = 2 // ENOENT (asm-generic/errno-base.h): no such conntrack entry
)

// Attributes of a conntrack entry (enum ctattr_type), of a tuple (enum ctattr_tuple), of its
// addresses (enum ctattr_ip) and of its layer 4 part (enum ctattr_l4proto).
const (
	ctaTupleOrig = 1 // CTA_TUPLE_ORIG: nested, the tuple of the original direction
	ctaMark      = 8 // CTA_MARK: __be32; the kernel may leave it out when the mark is 0

	ctaTupleIP    = 1 // CTA_TUPLE_IP: nested ctattr_ip
	ctaTupleProto = 2 // CTA_TUPLE_PROTO: nested ctattr_l4proto

	ctaIPv4Src = 1 // CTA_IP_V4_SRC: 4 bytes, network order
	ctaIPv4Dst = 2 // CTA_IP_V4_DST

	ctaProtoNum     = 1 // CTA_PROTO_NUM: u8, the IP protocol
	ctaProtoSrcPort = 2 // CTA_PROTO_SRC_PORT: __be16
	ctaProtoDstPort = 3 // CTA_PROTO_DST_PORT: __be16
)

// errNotIPv4 is a lookup of a flow that is not IPv4: netd tracks IPv4 TCP flows only.
var errNotIPv4 = errors.New("nfq: conntrack lookup of a flow that is not IPv4")

// tcpFlow returns src and dst as IPv4 (an IPv4-mapped IPv6 address, as net.TCPAddr often
// holds, counts as its IPv4 address), or errNotIPv4.
func tcpFlow(src, dst netip.AddrPort) (netip.AddrPort, netip.AddrPort, error) {
	s := netip.AddrPortFrom(src.Addr().Unmap(), src.Port())
	d := netip.AddrPortFrom(dst.Addr().Unmap(), dst.Port())
	if !s.Addr().Is4() || !d.Addr().Is4() {
		return s, d, fmt.Errorf("%w: %v → %v", errNotIPv4, src, dst)
	}
	return s, d, nil
}

// ctGetMessage asks for the conntrack entry whose original direction is the TCP flow src→dst,
// both IPv4. It asks for no ack: the kernel answers with the entry or with an NLMSG_ERROR,
// never both.
func ctGetMessage(seq uint32, src, dst netip.AddrPort) []byte {
	m := newBuilder(ctMsgGet, 0, seq, afInet, 0) // res_id 0: no queue, no conntrack group
	m.attr(ctaTupleOrig|nlaFNested, tupleAttrs(src, dst))
	return m.bytes()
}

// tupleAttrs encodes the attributes of the tuple src→dst: CTA_TUPLE_IP with both addresses,
// CTA_TUPLE_PROTO with TCP and both ports.
func tupleAttrs(src, dst netip.AddrPort) []byte {
	var ip, proto, tuple builder
	s, d := src.Addr().As4(), dst.Addr().As4()
	ip.attr(ctaIPv4Src, s[:])
	ip.attr(ctaIPv4Dst, d[:])
	proto.attr(ctaProtoNum, []byte{ipprotoTCP})
	proto.attr(ctaProtoSrcPort, binary.BigEndian.AppendUint16(nil, src.Port()))
	proto.attr(ctaProtoDstPort, binary.BigEndian.AppendUint16(nil, dst.Port()))
	tuple.attr(ctaTupleIP|nlaFNested, ip.b)
	tuple.attr(ctaTupleProto|nlaFNested, proto.b)
	return tuple.b
}

// ctAnswer reads the kernel's answer m to a get of the flow src→dst: the entry's mark and
// found, or found false for ENOENT. Any other errno, and an answer that does not decode, is an
// error, so that a caller who cannot learn the answer fails closed.
func ctAnswer(m nlmsg, src, dst netip.AddrPort) (mark uint32, found bool, err error) {
	switch m.typ {
	case nlmsgError:
		return 0, false, ctError(m.data)
	case ctMsgNew, ctMsgGet:
		return ctEntry(m.data, src, dst)
	}
	return 0, false, fmt.Errorf("nfq: conntrack answered with message type %#x", m.typ)
}

// ctError returns nil for ENOENT, the only errno that answers the question (there is no such
// entry), and an error for everything else. An ack (errno 0) is an error too: a get that
// succeeds is answered with the entry, never with an ack alone.
func ctError(data []byte) error {
	code, err := decodeError(data)
	switch {
	case err != nil:
		return err
	case code == enoent:
		return nil
	case code == 0:
		return errors.New("nfq: conntrack acked a get without sending the entry")
	}
	return fmt.Errorf("nfq: conntrack get: %w", syscall.Errno(code))
}

// ctEntry decodes the body of a conntrack entry message. The kernel finds an entry by either of
// its tuples, so a get of src→dst also finds the entry whose reply direction that is; such an
// entry is not the flow src→dst, and ctEntry reports it as not found.
func ctEntry(data []byte, src, dst netip.AddrPort) (mark uint32, found bool, err error) {
	if len(data) < nfgenHdrLen {
		return 0, false, errShort
	}
	attrs, err := parseAttrs(data[nfgenHdrLen:])
	if err != nil {
		return 0, false, err
	}
	orig, err := decodeTuple(attrs[ctaTupleOrig])
	if err != nil {
		return 0, false, err
	}
	if orig != (ctTuple{src, dst, ipprotoTCP}) {
		return 0, false, nil
	}
	switch b := attrs[ctaMark]; {
	case b == nil:
		return 0, true, nil // no CTA_MARK: the mark is 0
	case len(b) != 4:
		return 0, false, fmt.Errorf("nfq: conntrack mark of %d bytes", len(b))
	default:
		return binary.BigEndian.Uint32(b), true, nil
	}
}

// ctTuple is the part of a conntrack tuple a lookup compares: addresses, ports and protocol.
type ctTuple struct {
	src, dst netip.AddrPort
	proto    uint8
}

// decodeTuple decodes a CTA_TUPLE_ORIG holding IPv4 addresses; one without them, or with
// addresses or ports of the wrong size, is an error.
func decodeTuple(b []byte) (ctTuple, error) {
	if b == nil {
		return ctTuple{}, errors.New("nfq: conntrack entry without its original tuple")
	}
	tuple, err := parseAttrs(b)
	if err != nil {
		return ctTuple{}, err
	}
	ip, err := parseAttrs(tuple[ctaTupleIP])
	if err != nil {
		return ctTuple{}, err
	}
	proto, err := parseAttrs(tuple[ctaTupleProto])
	if err != nil {
		return ctTuple{}, err
	}
	s, sok := netip.AddrFromSlice(ip[ctaIPv4Src])
	d, dok := netip.AddrFromSlice(ip[ctaIPv4Dst])
	sp, dp, num := proto[ctaProtoSrcPort], proto[ctaProtoDstPort], proto[ctaProtoNum]
	if !sok || !dok || !s.Is4() || !d.Is4() || len(sp) != 2 || len(dp) != 2 || len(num) != 1 {
		return ctTuple{}, errors.New("nfq: conntrack entry's original tuple is not IPv4 with ports")
	}
	return ctTuple{
		src:   netip.AddrPortFrom(s, binary.BigEndian.Uint16(sp)),
		dst:   netip.AddrPortFrom(d, binary.BigEndian.Uint16(dp)),
		proto: num[0],
	}, nil
}
