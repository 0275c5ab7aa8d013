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
