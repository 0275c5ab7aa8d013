package nfq

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
)

// Flags are a TCP segment's control bits, at their positions in the header.
type Flags uint8

// The control bits a decision needs.
const (
	FIN Flags = 1 << 0
	SYN Flags = 1 << 1
	RST Flags = 1 << 2
	PSH Flags = 1 << 3
	ACK Flags = 1 << 4
	URG Flags = 1 << 5
)

// Segment is a queued IPv4 packet's TCP header and payload.
type Segment struct {
	Src, Dst         netip.Addr
	SrcPort, DstPort uint16
	Seq, Ack         uint32
	Flags            Flags
	Payload          []byte // a slice of the packet, not a copy
	// DataOffset is where Payload starts in the packet given to [ParseSegment].
	DataOffset int
}

// ErrNotTCP is a well-formed IPv4 packet that is not TCP: the ruleset queues only TCP, so a
// caller may drop it.
var ErrNotTCP = errors.New("nfq: not a tcp packet")

// ErrMalformed is a packet that is not a whole, well-formed IPv4 TCP segment. Every error of
// [ParseSegment] but [ErrNotTCP] wraps it.
var ErrMalformed = errors.New("nfq: malformed packet")

const (
	ipv4MinHdr = 20
	tcpMinHdr  = 20
	protoTCP   = 6
)

// ParseSegment parses pkt, an IPv4 packet from its IP header on, as one TCP segment. It refuses
// anything a kernel would not have sent whole: another IP version, a header or total length
// that does not fit the bytes given, a fragment, a TCP header shorter than its minimum. Bytes
// past the IP total length are ignored. It never panics.
func ParseSegment(pkt []byte) (Segment, error) {
	ip, err := ipv4Payload(pkt)
	if err != nil {
		return Segment{}, err
	}
	if len(ip) < tcpMinHdr {
		return Segment{}, fmt.Errorf("%w: %d bytes of tcp header", ErrMalformed, len(ip))
	}
	off := int(ip[12]>>4) * 4
	if off < tcpMinHdr || off > len(ip) {
		return Segment{}, fmt.Errorf("%w: tcp data offset %d", ErrMalformed, off)
	}
	return Segment{
		Src:        netip.AddrFrom4([4]byte(pkt[12:16])),
		Dst:        netip.AddrFrom4([4]byte(pkt[16:20])),
		SrcPort:    binary.BigEndian.Uint16(ip[0:]),
		DstPort:    binary.BigEndian.Uint16(ip[2:]),
		Seq:        binary.BigEndian.Uint32(ip[4:]),
		Ack:        binary.BigEndian.Uint32(ip[8:]),
		Flags:      Flags(ip[13]),
		Payload:    ip[off:],
		DataOffset: int(pkt[0]&0x0f)*4 + off,
	}, nil
}

// ipv4Payload checks pkt's IPv4 header and returns what it carries, which must be TCP.
func ipv4Payload(pkt []byte) ([]byte, error) {
	if len(pkt) < ipv4MinHdr {
		return nil, fmt.Errorf("%w: %d bytes of ipv4 header", ErrMalformed, len(pkt))
	}
	if v := pkt[0] >> 4; v != 4 {
		return nil, fmt.Errorf("%w: ip version %d", ErrMalformed, v)
	}
	ihl := int(pkt[0]&0x0f) * 4
	total := int(binary.BigEndian.Uint16(pkt[2:]))
	switch {
	case ihl < ipv4MinHdr:
		return nil, fmt.Errorf("%w: ipv4 header length %d", ErrMalformed, ihl)
	case total < ihl || total > len(pkt):
		// A total of 0 is also IPv4 BIG TCP (a GSO packet above 64 KiB), which the copy
		// range could not hold whole anyway.
		return nil, fmt.Errorf("%w: ipv4 total length %d of %d bytes", ErrMalformed, total, len(pkt))
	case binary.BigEndian.Uint16(pkt[6:])&0x3fff != 0:
		return nil, fmt.Errorf("%w: ipv4 fragment", ErrMalformed) // MF set, or an offset
	case pkt[9] != protoTCP:
		return nil, ErrNotTCP
	}
	return pkt[ihl:total], nil
}

// TCPChecksum returns pkt, an IPv4 TCP packet as [ParseSegment] takes it, with its TCP
// checksum computed over the pseudo-header, the header and the data: what a packet needs when
// it is handed to the kernel as complete. It returns pkt unchanged when it does not parse.
func TCPChecksum(pkt []byte) []byte {
	ip, err := ipv4Payload(pkt)
	if err != nil || len(ip) < tcpMinHdr {
		return pkt
	}
	out := append([]byte(nil), pkt...)
	ihl := int(pkt[0]&0x0f) * 4
	tcp := out[ihl : ihl+len(ip)]
	tcp[16], tcp[17] = 0, 0
	var sum uint32
	add := func(b []byte) {
		for len(b) >= 2 {
			sum += uint32(b[0])<<8 | uint32(b[1])
			b = b[2:]
		}
		if len(b) == 1 {
			sum += uint32(b[0]) << 8
		}
	}
	add(out[12:20]) // source and destination addresses
	sum += protoTCP + uint32(len(tcp))
	add(tcp)
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(tcp[16:], ^uint16(sum))
	return out
}
