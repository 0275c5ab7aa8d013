package nfq

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// The expected messages below are written field by field from the kernel's uapi structs, not
// with the builder: host-endian fields (nlmsghdr, nlattr headers, nlmsgerr) through h16 and
// h32, big-endian ones (nfgenmsg.res_id and every __be field) as literal bytes.

func h16(v uint16) []byte { return binary.NativeEndian.AppendUint16(nil, v) }
func h32(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }

// cat joins byte slices.
func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// nlhdr is a struct nlmsghdr.
func nlhdr(length uint32, typ, flags uint16, seq, pid uint32) []byte {
	return cat(h32(length), h16(typ), h16(flags), h32(seq), h32(pid))
}

// nla is a struct nlattr header; the caller appends the data and padding.
func nla(length, typ uint16) []byte { return cat(h16(length), h16(typ)) }

func TestBindMessageLayout(t *testing.T) {
	want := cat(
		nlhdr(64, 0x0302, 0x0001|0x0004, 9, 0), // NFQNL_MSG_CONFIG, NLM_F_REQUEST|NLM_F_ACK
		[]byte{2, 0, 0x00, 0x07},               // nfgenmsg: AF_INET, NFNETLINK_V0, res_id 7 (__be16)
		nla(8, 1), []byte{1, 0, 0x00, 0x02},    // NFQA_CFG_CMD: BIND, pad, pf AF_INET (__be16)
		nla(9, 2), []byte{0, 0, 0xff, 0xff, 2}, []byte{0, 0, 0}, // NFQA_CFG_PARAMS: range, COPY_PACKET; pad
		nla(8, 3), []byte{0, 0, 0x04, 0x00}, // NFQA_CFG_QUEUE_MAXLEN 1024
		nla(8, 4), []byte{0, 0, 0, 0x05}, // NFQA_CFG_MASK: FAIL_OPEN|GSO
		nla(8, 5), []byte{0, 0, 0, 0x04}, // NFQA_CFG_FLAGS: GSO, and FAIL_OPEN cleared
	)
	if got := bindMessage(9, 7, 1024); !bytes.Equal(got, want) {
		t.Errorf("bindMessage(9, 7, 1024) =\n% x\nwant\n% x", got, want)
	}
}

func TestCmdMessageLayout(t *testing.T) {
	want := cat(
		nlhdr(28, 0x0302, 0x0005, 1, 0),
		[]byte{2, 0, 0x01, 0x00},            // queue 256: the high byte first
		nla(8, 1), []byte{4, 0, 0x00, 0x02}, // PF_UNBIND for AF_INET
	)
	if got := cmdMessage(1, 256, cmdPFUnbind); !bytes.Equal(got, want) {
		t.Errorf("cmdMessage(1, 256, PF_UNBIND) =\n% x\nwant\n% x", got, want)
	}
}

func TestVerdictMessageLayout(t *testing.T) {
	tests := []struct {
		name      string
		got, want []byte
	}{
		{
			name: "repeat with mark",
			got:  verdictMessage(5, 7, 0x01020304, verdictRepeat, 0xa0b0c0d0, true),
			want: cat(
				nlhdr(40, 0x0301, 0x0001, 5, 0), // NFQNL_MSG_VERDICT, NLM_F_REQUEST, no ack
				[]byte{0, 0, 0x00, 0x07},
				nla(12, 2), []byte{0, 0, 0, 4, 1, 2, 3, 4}, // verdict NF_REPEAT, id: both __be32
				nla(8, 3), []byte{0xa0, 0xb0, 0xc0, 0xd0}, // NFQA_MARK, __be32
			),
		},
		{
			name: "repeat with mark and a packet of 5 bytes, padded to the attribute alignment",
			got:  verdictPayloadMessage(8, 7, 42, verdictRepeat, 0xa11, true, []byte{1, 2, 3, 4, 5}),
			want: cat(
				nlhdr(52, 0x0301, 0x0001, 8, 0), []byte{0, 0, 0, 7},
				nla(12, 2), []byte{0, 0, 0, 4, 0, 0, 0, 42},
				nla(8, 3), []byte{0, 0, 0x0a, 0x11},
				nla(9, 10), []byte{1, 2, 3, 4, 5, 0, 0, 0}, // NFQA_PAYLOAD: the length counts no padding
			),
		},
		{
			name: "accept",
			got:  verdictMessage(6, 7, 42, verdictAccept, 0, false),
			want: cat(nlhdr(32, 0x0301, 0x0001, 6, 0), []byte{0, 0, 0, 7},
				nla(12, 2), []byte{0, 0, 0, 1, 0, 0, 0, 42}),
		},
		{
			name: "drop",
			got:  verdictMessage(7, 7, 42, verdictDrop, 0, false),
			want: cat(nlhdr(32, 0x0301, 0x0001, 7, 0), []byte{0, 0, 0, 7},
				nla(12, 2), []byte{0, 0, 0, 0, 0, 0, 0, 42}),
		},
	}
	for _, tc := range tests {
		if !bytes.Equal(tc.got, tc.want) {
			t.Errorf("%s: verdict message =\n% x\nwant\n% x", tc.name, tc.got, tc.want)
		}
	}
}

// packetMessage is an NFQNL_MSG_PACKET as the kernel's nfqnl_build_packet_message lays it
// out, with attributes the decoder must skip (the interface index, the conntrack state) next
// to the ones it reads, each numbered as enum nfqnl_attr_type numbers it.
func packetMessage(id uint32, mark uint32, payload []byte) []byte {
	pad := make([]byte, align(len(payload))-len(payload))
	body := cat(
		[]byte{2, 0, 0x00, 0x07},                           // nfgenmsg: AF_INET, v0, queue 7
		nla(11, 1), binary.BigEndian.AppendUint32(nil, id), // NFQA_PACKET_HDR: packet_id,
		[]byte{0x08, 0x00, 3, 0},                            // hw_protocol ETH_P_IP, hook LOCAL_OUT; pad
		nla(8, 3), binary.BigEndian.AppendUint32(nil, mark), // NFQA_MARK
		nla(8, 6), []byte{0, 0, 0, 1}, // NFQA_IFINDEX_OUTDEV 1
		nla(8, 12), []byte{0, 0, 0, 2}, // NFQA_CT_INFO: IP_CT_NEW, which is no GSO flag
		nla(8, 14), []byte{0, 0, 0, 2}, // NFQA_SKB_INFO: NFQA_SKB_GSO
		nla(8, 13), []byte{0, 0, 0x05, 0xdc}, // NFQA_CAP_LEN 1500
		nla(uint16(4+len(payload)), 10), payload, pad, // NFQA_PAYLOAD
	)
	return cat(nlhdr(uint32(nlmsgHdrLen+len(body)), 0x0300, 0, 0, 0), body)
}

func TestDecodePacket(t *testing.T) {
	payload := []byte{0x45, 1, 2, 3, 4} // 5 bytes: its attribute needs 3 bytes of padding
	msgs, err := splitMessages(packetMessage(0xdeadbeef, 0x10, payload))
	if err != nil || len(msgs) != 1 || msgs[0].typ != msgPacket {
		t.Fatalf("splitMessages = %+v, %v; want one packet message", msgs, err)
	}
	got, err := decodePacket(msgs[0].data)
	if err != nil {
		t.Fatalf("decodePacket: %v", err)
	}
	want := Packet{ID: 0xdeadbeef, HWProtocol: 0x0800, Hook: 3, Mark: 0x10, GSO: true, CapLen: 1500, Payload: payload}
	if got.ID != want.ID || got.HWProtocol != want.HWProtocol || got.Hook != want.Hook ||
		got.Mark != want.Mark || got.GSO != want.GSO || got.CapLen != want.CapLen ||
		!bytes.Equal(got.Payload, want.Payload) {
		t.Errorf("decodePacket = %+v, want %+v", got, want)
	}
}

func TestDecodePacketCopiesPayload(t *testing.T) {
	raw := packetMessage(1, 0, []byte{0x45, 0, 0, 0})
	msgs, _ := splitMessages(raw)
	p, err := decodePacket(msgs[0].data)
	if err != nil {
		t.Fatal(err)
	}
	clear(raw) // the receive buffer is reused for the next datagram
	if p.Payload[0] != 0x45 {
		t.Errorf("the packet's payload aliases the receive buffer")
	}
}

func TestDecodePacketRefusals(t *testing.T) {
	tests := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"no packet header", cat([]byte{2, 0, 0, 7}, nla(8, 3), []byte{0, 0, 0, 1})},
		{"short packet header", cat([]byte{2, 0, 0, 7}, nla(10, 1), []byte{0, 0, 0, 1, 8, 0}, []byte{0, 0})},
		{"attribute past the end", cat([]byte{2, 0, 0, 7}, nla(200, 1), []byte{0, 0, 0, 1})},
		{"attribute shorter than its header", cat([]byte{2, 0, 0, 7}, nla(2, 1), []byte{0, 0, 0, 1})},
	}
	for _, tc := range tests {
		if p, err := decodePacket(tc.data); err == nil {
			t.Errorf("%s: decodePacket = %+v, want an error", tc.name, p)
		}
	}
}

func TestParseAttrsMasksFlags(t *testing.T) {
	// NLA_F_NET_BYTEORDER (0x4000) on NFQA_MARK still names NFQA_MARK.
	attrs, err := parseAttrs(cat(nla(8, 0x4000|3), []byte{0, 0, 0, 9}))
	if err != nil || be32(attrs[attrMark]) != 9 {
		t.Errorf("parseAttrs = %v, %v; want mark 9", attrs[attrMark], err)
	}
}

func TestSplitMessages(t *testing.T) {
	ack := cat(nlhdr(36, nlmsgError, 0, 3, 0), h32(0), nlhdr(20, 0x0302, 5, 3, 77))
	enoent := cat(nlhdr(36, nlmsgError, 0, 4, 0), h32(uint32(0xfffffffe)), nlhdr(20, 0x0301, 1, 4, 77))
	msgs, err := splitMessages(cat(ack, enoent, packetMessage(1, 0, nil)))
	if err != nil || len(msgs) != 3 {
		t.Fatalf("splitMessages = %d messages, %v; want 3", len(msgs), err)
	}
	if code, err := decodeError(msgs[0].data); code != 0 || err != nil || msgs[0].seq != 3 {
		t.Errorf("ack: code %d, err %v, seq %d; want 0, nil, 3", code, err, msgs[0].seq)
	}
	if code, err := decodeError(msgs[1].data); code != 2 || err != nil || msgs[1].seq != 4 {
		t.Errorf("ENOENT: code %d, err %v, seq %d; want 2, nil, 4", code, err, msgs[1].seq)
	}
	if msgs[2].typ != msgPacket {
		t.Errorf("third message type %#x, want %#x", msgs[2].typ, msgPacket)
	}
}

func TestSplitMessagesRefusals(t *testing.T) {
	for _, b := range [][]byte{
		{1, 2, 3},                               // shorter than a header
		nlhdr(8, 0x0300, 0, 0, 0),               // length below the header's
		cat(nlhdr(40, 0x0300, 0, 0, 0), h32(0)), // length past the datagram
	} {
		if _, err := splitMessages(b); err == nil {
			t.Errorf("splitMessages(% x) succeeded, want an error", b)
		}
	}
}

// FuzzDecode feeds arbitrary datagrams to the decoder, which must never panic, and checks
// that a decoded payload is a copy of bytes of the datagram.
func FuzzDecode(f *testing.F) {
	f.Add(packetMessage(1, 2, []byte{0x45, 0, 0, 20}))
	f.Add(cat(nlhdr(36, nlmsgError, 0, 3, 0), h32(0), nlhdr(20, 0x0302, 5, 3, 77)))
	f.Add(cat(packetMessage(1, 0, nil), packetMessage(2, 0, []byte{1})))
	f.Fuzz(func(t *testing.T, b []byte) {
		msgs, _ := splitMessages(b)
		for _, m := range msgs {
			decodeError(m.data)
			p, err := decodePacket(m.data)
			if err == nil && !bytes.Contains(b, p.Payload) {
				t.Fatalf("payload % x is not from the datagram", p.Payload)
			}
		}
	})
}
