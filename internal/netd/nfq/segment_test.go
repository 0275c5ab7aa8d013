package nfq

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"
)

// tcpPacket builds an IPv4 TCP packet from 10.0.0.1:40000 to 10.0.0.2:443 with a 20-byte IP
// header, opts bytes of TCP options and payload. The checksums are left zero: the parser reads
// none.
func tcpPacket(seq uint32, flags Flags, opts int, payload []byte) []byte {
	tcpLen := 20 + opts
	total := 20 + tcpLen + len(payload)
	ip := []byte{0x45, 0, 0, 0, 0, 1, 0x40, 0, 64, protoTCP, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2}
	binary.BigEndian.PutUint16(ip[2:], uint16(total)) // flags: DF only
	tcp := make([]byte, tcpLen)
	binary.BigEndian.PutUint16(tcp[0:], 40000)
	binary.BigEndian.PutUint16(tcp[2:], 443)
	binary.BigEndian.PutUint32(tcp[4:], seq)
	binary.BigEndian.PutUint32(tcp[8:], 7)
	tcp[12] = byte(tcpLen/4) << 4
	tcp[13] = byte(flags)
	return cat(ip, tcp, payload)
}

func TestParseSegment(t *testing.T) {
	hello := []byte("\x16\x03\x01hello")
	got, err := ParseSegment(tcpPacket(1000, PSH|ACK, 12, hello))
	if err != nil {
		t.Fatalf("ParseSegment: %v", err)
	}
	want := Segment{
		Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2"),
		SrcPort: 40000, DstPort: 443, Seq: 1000, Ack: 7, Flags: PSH | ACK, Payload: hello,
	}
	if got.Src != want.Src || got.Dst != want.Dst || got.SrcPort != want.SrcPort ||
		got.DstPort != want.DstPort || got.Seq != want.Seq || got.Ack != want.Ack ||
		got.Flags != want.Flags || !bytes.Equal(got.Payload, want.Payload) {
		t.Errorf("ParseSegment = %+v, want %+v", got, want)
	}
}

func TestParseSegmentSYN(t *testing.T) {
	got, err := ParseSegment(tcpPacket(99, SYN, 20, nil))
	if err != nil || got.Flags != SYN || len(got.Payload) != 0 || got.Seq != 99 {
		t.Errorf("ParseSegment(SYN) = %+v, %v; want a SYN without payload", got, err)
	}
}

func TestParseSegmentIgnoresTrailer(t *testing.T) {
	pkt := append(tcpPacket(1, ACK, 0, []byte("ab")), "trailer"...)
	got, err := ParseSegment(pkt)
	if err != nil || string(got.Payload) != "ab" {
		t.Errorf("ParseSegment = %q, %v; want payload \"ab\"", got.Payload, err)
	}
}

func TestParseSegmentRefusals(t *testing.T) {
	good := func() []byte { return tcpPacket(1, ACK, 0, []byte("data")) }
	edit := func(f func(p []byte) []byte) []byte { return f(good()) }
	tests := []struct {
		name string
		pkt  []byte
		want error
	}{
		{"empty", nil, ErrMalformed},
		{"short ip header", good()[:19], ErrMalformed},
		{"ipv6", edit(func(p []byte) []byte { p[0] = 0x65; return p }), ErrMalformed},
		{"ihl below 5", edit(func(p []byte) []byte { p[0] = 0x44; return p }), ErrMalformed},
		{"ihl past the packet", edit(func(p []byte) []byte { p[0] = 0x4f; return p[:40] }), ErrMalformed},
		{"total below ihl", edit(func(p []byte) []byte { p[2], p[3] = 0, 19; return p }), ErrMalformed},
		{"total past the bytes", edit(func(p []byte) []byte { return p[:len(p)-1] }), ErrMalformed},
		{"total zero (big tcp)", edit(func(p []byte) []byte { p[2], p[3] = 0, 0; return p }), ErrMalformed},
		{"more fragments", edit(func(p []byte) []byte { p[6] |= 0x20; return p }), ErrMalformed},
		{"fragment offset", edit(func(p []byte) []byte { p[7] = 1; return p }), ErrMalformed},
		{"udp", edit(func(p []byte) []byte { p[9] = 17; return p }), ErrNotTCP},
		{"short tcp header", edit(func(p []byte) []byte { p[2], p[3] = 0, 39; return p }), ErrMalformed},
		{"data offset below 5", edit(func(p []byte) []byte { p[32] = 4 << 4; return p }), ErrMalformed},
		{"data offset past the packet", edit(func(p []byte) []byte { p[32] = 15 << 4; return p }), ErrMalformed},
	}
	for _, tc := range tests {
		if s, err := ParseSegment(tc.pkt); !errors.Is(err, tc.want) {
			t.Errorf("%s: ParseSegment = %+v, %v; want %v", tc.name, s, err, tc.want)
		}
	}
}

// FuzzParseSegment: the parser never panics, and what it accepts is consistent with the bytes:
// the addresses and ports are the header's, and the payload is the tail of the packet up to
// the IP total length.
func FuzzParseSegment(f *testing.F) {
	f.Add(tcpPacket(1, SYN, 20, nil))
	f.Add(tcpPacket(2, PSH|ACK, 0, []byte("\x16\x03\x01\x00\x05hello")))
	f.Add(append(tcpPacket(3, FIN|ACK, 4, []byte("x")), 0, 0))
	f.Fuzz(func(t *testing.T, pkt []byte) {
		s, err := ParseSegment(pkt)
		if err != nil {
			return
		}
		total := int(binary.BigEndian.Uint16(pkt[2:]))
		ihl := int(pkt[0]&0x0f) * 4
		if !bytes.Equal(s.Payload, pkt[total-len(s.Payload):total]) {
			t.Fatalf("payload % x is not the end of the packet's %d bytes", s.Payload, total)
		}
		if len(s.Payload) > total-ihl-tcpMinHdr {
			t.Fatalf("payload of %d bytes leaves no room for the headers (total %d, ihl %d)", len(s.Payload), total, ihl)
		}
		if s.Src.As4() != [4]byte(pkt[12:16]) || s.DstPort != binary.BigEndian.Uint16(pkt[ihl+2:]) {
			t.Fatalf("addresses or ports are not the header's: %+v", s)
		}
	})
}

// TestTCPChecksum: the checksum of a packet a real stack built is what TCPChecksum computes
// again after zeroing it, and a packet whose checksum field holds anything else gets the right
// one; anything that does not parse comes back as it was.
func TestTCPChecksum(t *testing.T) {
	// A SYN from 10.99.0.2:40000 to 10.99.0.1:443 with an MSS option, as Linux sent it (checksum
	// 0x2ff9 as captured).
	pkt := []byte{
		0x45, 0x00, 0x00, 0x2c, 0x00, 0x00, 0x40, 0x00, 0x40, 0x06, 0x26, 0xc6, 10, 99, 0, 2, 10, 99, 0, 1,
		0x9c, 0x40, 0x01, 0xbb, 0x00, 0x00, 0x03, 0xe8, 0x00, 0x00, 0x00, 0x00, 0x60, 0x02, 0xff, 0xff,
		0x00, 0x00, 0x00, 0x00, 0x02, 0x04, 0x05, 0xb4,
	}
	want := referenceChecksum(pkt)
	got := TCPChecksum(pkt)
	if c := uint16(got[36])<<8 | uint16(got[37]); c != want {
		t.Errorf("checksum %#04x, want %#04x", c, want)
	}
	if pkt[36] != 0 || pkt[37] != 0 {
		t.Error("TCPChecksum changed its argument")
	}
	odd := append(append([]byte{}, pkt...), 0x41) // one byte of data: an odd length
	odd[3]++
	if c := TCPChecksum(odd); uint16(c[36])<<8|uint16(c[37]) != referenceChecksum(odd) {
		t.Errorf("odd length: checksum %#04x, want %#04x", uint16(c[36])<<8|uint16(c[37]), referenceChecksum(odd))
	}
	bad := []byte{0x45, 0, 0}
	if c := TCPChecksum(bad); string(c) != string(bad) {
		t.Errorf("a packet that does not parse came back as %x", c)
	}
}

// referenceChecksum is RFC 793's checksum written out the long way, for the test.
func referenceChecksum(pkt []byte) uint16 {
	ihl := int(pkt[0]&0xf) * 4
	tcp := append([]byte{}, pkt[ihl:]...)
	tcp[16], tcp[17] = 0, 0
	pseudo := append(append([]byte{}, pkt[12:20]...), 0, 6, byte(len(tcp)>>8), byte(len(tcp)))
	all := append(pseudo, tcp...)
	if len(all)%2 == 1 {
		all = append(all, 0)
	}
	var sum uint64
	for i := 0; i < len(all); i += 2 {
		sum += uint64(all[i])<<8 | uint64(all[i+1])
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}
