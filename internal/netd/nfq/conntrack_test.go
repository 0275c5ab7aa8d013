package nfq

import (
	"bytes"
	"errors"
	"net/netip"
	"syscall"
	"testing"
)

// As in netlink_test.go, the expected messages are written field by field from the kernel's
// uapi (linux/netfilter/nfnetlink_conntrack.h), with h16, h32, nlhdr and nla from there, not
// with the encoder under test.

var (
	ctSrc = netip.MustParseAddrPort("10.1.2.3:40000")    // port 0x9c40
	ctDst = netip.MustParseAddrPort("93.184.216.34:443") // port 0x01bb
)

func TestCtGetMessageLayout(t *testing.T) {
	ip := cat(
		nla(8, 1), []byte{10, 1, 2, 3}, // CTA_IP_V4_SRC, network order
		nla(8, 2), []byte{93, 184, 216, 34}, // CTA_IP_V4_DST
	)
	proto := cat(
		nla(5, 1), []byte{6, 0, 0, 0}, // CTA_PROTO_NUM: IPPROTO_TCP (u8); pad
		nla(6, 2), []byte{0x9c, 0x40, 0, 0}, // CTA_PROTO_SRC_PORT 40000 (__be16); pad
		nla(6, 3), []byte{0x01, 0xbb, 0, 0}, // CTA_PROTO_DST_PORT 443 (__be16); pad
	)
	want := cat(
		nlhdr(72, 0x0101, 0x0001, 7, 0), // IPCTNL_MSG_CT_GET (NFNL_SUBSYS_CTNETLINK 1, message 1), NLM_F_REQUEST
		[]byte{2, 0, 0, 0},              // nfgenmsg: AF_INET, NFNETLINK_V0, res_id 0
		nla(52, 0x8000|1),               // CTA_TUPLE_ORIG | NLA_F_NESTED: what follows
		nla(20, 0x8000|1), ip,           // CTA_TUPLE_IP | NLA_F_NESTED
		nla(28, 0x8000|2), proto, // CTA_TUPLE_PROTO | NLA_F_NESTED
	)
	if got := ctGetMessage(7, ctSrc, ctDst); !bytes.Equal(got, want) {
		t.Errorf("ctGetMessage(7, %v, %v) =\n% x\nwant\n% x", ctSrc, ctDst, got, want)
	}
}

func TestTCPFlow(t *testing.T) {
	mapped := netip.MustParseAddrPort("[::ffff:10.1.2.3]:40000") // as net.TCPAddr.AddrPort gives it
	s, d, err := tcpFlow(mapped, ctDst)
	if err != nil || s != ctSrc || d != ctDst {
		t.Errorf("tcpFlow(%v, %v) = %v, %v, %v; want %v, %v, nil", mapped, ctDst, s, d, err, ctSrc, ctDst)
	}
	v6 := netip.MustParseAddrPort("[2001:db8::1]:443")
	if _, _, err := tcpFlow(ctSrc, v6); !errors.Is(err, errNotIPv4) {
		t.Errorf("tcpFlow(%v, %v) = %v, want errNotIPv4", ctSrc, v6, err)
	}
	if _, _, err := tcpFlow(netip.AddrPort{}, ctDst); !errors.Is(err, errNotIPv4) {
		t.Errorf("tcpFlow of the zero AddrPort = %v, want errNotIPv4", err)
	}
}

// tupleAttr is a nested CTA_TUPLE_ORIG or CTA_TUPLE_REPLY of an IPv4 TCP flow, laid out as the
// kernel's ctnetlink_dump_tuples lays it out.
func tupleAttr(typ uint16, src, dst netip.AddrPort) []byte {
	s, d := src.Addr().As4(), dst.Addr().As4()
	ip := cat(nla(8, 1), s[:], nla(8, 2), d[:])
	proto := cat(
		nla(5, 1), []byte{6, 0, 0, 0},
		nla(6, 2), []byte{byte(src.Port() >> 8), byte(src.Port()), 0, 0},
		nla(6, 3), []byte{byte(dst.Port() >> 8), byte(dst.Port()), 0, 0},
	)
	inner := cat(nla(uint16(4+len(ip)), 0x8000|1), ip, nla(uint16(4+len(proto)), 0x8000|2), proto)
	return cat(nla(uint16(4+len(inner)), 0x8000|typ), inner)
}

// ctEntryAttrs are the top-level attributes of a conntrack entry for the flow src→dst in the
// kernel's order (ctnetlink_fill_info), each a separate slice so that a test can cut the
// message between them. CTA_MARK is left out when mark is nil.
func ctEntryAttrs(src, dst netip.AddrPort, mark []byte) [][]byte {
	attrs := [][]byte{
		tupleAttr(1, src, dst),                                               // CTA_TUPLE_ORIG
		tupleAttr(2, dst, src),                                               // CTA_TUPLE_REPLY
		cat(nla(8, 3), []byte{0, 0, 0x01, 0x8e}),                             // CTA_STATUS
		cat(nla(8, 7), []byte{0, 0, 0x00, 0x78}),                             // CTA_TIMEOUT 120
		cat(nla(16, 0x8004), nla(12, 0x8001), nla(5, 1), []byte{3, 0, 0, 0}), // CTA_PROTOINFO{TCP{STATE}}
	}
	if mark != nil {
		attrs = append(attrs, cat(nla(uint16(4+len(mark)), 8), mark, make([]byte, align(len(mark))-len(mark))))
	}
	return append(attrs,
		cat(nla(8, 11), []byte{0, 0, 0, 1}),          // CTA_USE
		cat(nla(8, 12), []byte{0xab, 0xcd, 0xef, 1}), // CTA_ID
	)
}

// ctEntryMsg is a conntrack entry message of type typ and sequence seq with the given
// top-level attributes.
func ctEntryMsg(typ uint16, seq uint32, attrs ...[]byte) []byte {
	body := cat(append([][]byte{{2, 0, 0, 0}}, attrs...)...)                    // nfgenmsg: AF_INET, v0, res_id 0
	return cat(nlhdr(uint32(nlmsgHdrLen+len(body)), typ, 0x2, seq, 4242), body) // NLM_F_MULTI, as the kernel sets it
}

// errMsg is an NLMSG_ERROR carrying -errno, followed by the header of the request it answers.
func errMsg(seq uint32, errno int32) []byte {
	return cat(nlhdr(36, nlmsgError, 0, seq, 4242), h32(uint32(-errno)), nlhdr(72, 0x0101, 1, seq, 0))
}

// oneMessage splits a datagram holding one message.
func oneMessage(t *testing.T, b []byte) nlmsg {
	t.Helper()
	msgs, err := splitMessages(b)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("splitMessages = %d messages, %v; want one", len(msgs), err)
	}
	return msgs[0]
}

func TestCtAnswer(t *testing.T) {
	mark := []byte{0x00, 0x02, 0x00, 0x01} // 0x20001, __be32
	tests := []struct {
		name  string
		msg   []byte
		mark  uint32
		found bool
	}{
		// IPCTNL_MSG_CT_NEW, as Linux 6.18 answers.
		{"entry with a mark", ctEntryMsg(0x0100, 1, ctEntryAttrs(ctSrc, ctDst, mark)...), 0x20001, true},
		{"entry with mark 0", ctEntryMsg(0x0100, 1, ctEntryAttrs(ctSrc, ctDst, []byte{0, 0, 0, 0})...), 0, true},
		{"entry without a mark", ctEntryMsg(0x0100, 1, ctEntryAttrs(ctSrc, ctDst, nil)...), 0, true},
		{"entry as IPCTNL_MSG_CT_GET", ctEntryMsg(0x0101, 1, ctEntryAttrs(ctSrc, ctDst, mark)...), 0x20001, true},
		{"ENOENT", errMsg(1, 2), 0, false},
		// The kernel finds an entry by its reply tuple too: this one's original direction is
		// ctDst→ctSrc, so the flow ctSrc→ctDst does not exist.
		{"entry of the reverse flow", ctEntryMsg(0x0100, 1, ctEntryAttrs(ctDst, ctSrc, mark)...), 0, false},
	}
	for _, tc := range tests {
		mark, found, err := ctAnswer(oneMessage(t, tc.msg), ctSrc, ctDst)
		if mark != tc.mark || found != tc.found || err != nil {
			t.Errorf("%s: ctAnswer = %#x, %v, %v; want %#x, %v, nil", tc.name, mark, found, err, tc.mark, tc.found)
		}
	}
}

func TestCtAnswerErrno(t *testing.T) {
	_, found, err := ctAnswer(oneMessage(t, errMsg(1, 1)), ctSrc, ctDst) // EPERM
	var errno syscall.Errno
	if found || !errors.As(err, &errno) || errno != 1 {
		t.Errorf("ctAnswer of EPERM = found %v, %v; want an error carrying errno 1", found, err)
	}
}

func TestCtAnswerRefusals(t *testing.T) {
	other := netip.MustParseAddrPort("10.1.2.3:40001")
	noOrig := ctEntryAttrs(ctSrc, ctDst, nil)[1:]
	tests := []struct {
		name string
		msg  []byte
	}{
		{"ack without the entry", errMsg(1, 0)},
		{"error without its code", cat(nlhdr(18, nlmsgError, 0, 1, 0), []byte{0, 0})},
		{"another message type", ctEntryMsg(0x0102, 1, ctEntryAttrs(ctSrc, ctDst, nil)...)},
		{"a queue's message", ctEntryMsg(0x0300, 1, ctEntryAttrs(ctSrc, ctDst, nil)...)},
		{"no original tuple", ctEntryMsg(0x0100, 1, noOrig...)},
		{"mark of no bytes", ctEntryMsg(0x0100, 1, ctEntryAttrs(ctSrc, ctDst, []byte{})...)},
		{"mark of two bytes", ctEntryMsg(0x0100, 1, ctEntryAttrs(ctSrc, ctDst, []byte{0, 1})...)},
		{"no nfgenmsg", cat(nlhdr(18, 0x0101, 0, 1, 0), []byte{2, 0})},
		{"original tuple without its protocol", ctEntryMsg(0x0100, 1,
			cat(nla(24, 0x8001), nla(20, 0x8001), nla(8, 1), []byte{10, 1, 2, 3}, nla(8, 2), []byte{93, 184, 216, 34}))},
		{"original tuple without ports", ctEntryMsg(0x0100, 1,
			cat(nla(36, 0x8001), nla(20, 0x8001), nla(8, 1), []byte{10, 1, 2, 3}, nla(8, 2), []byte{93, 184, 216, 34},
				nla(12, 0x8002), nla(5, 1), []byte{6, 0, 0, 0}))},
		{"original tuple with a short address", ctEntryMsg(0x0100, 1,
			cat(nla(12, 0x8001), nla(8, 0x8001), nla(4, 1), nla(4, 2)))},
	}
	for _, tc := range tests {
		if mark, found, err := ctAnswer(oneMessage(t, tc.msg), ctSrc, ctDst); err == nil {
			t.Errorf("%s: ctAnswer = %#x, %v, nil; want an error", tc.name, mark, found)
		}
	}
	// A well-formed entry of another flow is not an error, and not found.
	msg := oneMessage(t, ctEntryMsg(0x0100, 1, ctEntryAttrs(ctSrc, ctDst, nil)...))
	if mark, found, err := ctAnswer(msg, other, ctDst); found || err != nil {
		t.Errorf("ctAnswer for %v of the entry of %v = %#x, %v, %v; want not found", other, ctSrc, mark, found, err)
	}
}

// TestCtAnswerTruncated cuts an entry message at every length, with its header saying so, as a
// kernel sending a short message would. Cut inside an attribute, it is an error; cut between two,
// it decodes as the shorter entry it is: an error before the original tuple is whole, the entry
// without its mark before the mark. It never panics.
func TestCtAnswerTruncated(t *testing.T) {
	attrs := ctEntryAttrs(ctSrc, ctDst, []byte{0, 2, 0, 1})
	whole := cat(attrs...)
	boundaries := map[int]int{} // cut length → how many whole attributes precede it
	for i, n := 0, 0; i <= len(attrs); i++ {
		boundaries[n] = i
		if i < len(attrs) {
			n += len(attrs[i])
		}
	}
	markIndex := 5
	for cut := 0; cut < len(whole); cut++ {
		m := oneMessage(t, ctEntryMsg(0x0100, 1, whole[:cut]))
		mark, found, err := ctAnswer(m, ctSrc, ctDst)
		n, atBoundary := boundaries[cut]
		switch {
		case !atBoundary || n == 0:
			if err == nil {
				t.Errorf("cut at %d of %d: ctAnswer = %#x, %v, nil; want an error", cut, len(whole), mark, found)
			}
		case n <= markIndex:
			if err != nil || !found || mark != 0 {
				t.Errorf("cut at %d, after %d attributes: ctAnswer = %#x, %v, %v; want found, mark 0", cut, n, mark, found, err)
			}
		default:
			if err != nil || !found || mark != 0x20001 {
				t.Errorf("cut at %d, after %d attributes: ctAnswer = %#x, %v, %v; want found, mark 0x20001", cut, n, mark, found, err)
			}
		}
	}
	// Cut short of its own header instead, the datagram does not split.
	datagram := ctEntryMsg(0x0100, 1, attrs...)
	for cut := range len(datagram) {
		if _, err := splitMessages(datagram[:cut]); err == nil && cut > 0 {
			t.Errorf("splitMessages of %d of %d bytes succeeded", cut, len(datagram))
		}
	}
}

// FuzzCtAnswer feeds arbitrary datagrams to the answer's decoder, which must never panic nor
// report an entry together with an error.
func FuzzCtAnswer(f *testing.F) {
	f.Add(ctEntryMsg(0x0100, 1, ctEntryAttrs(ctSrc, ctDst, []byte{0, 2, 0, 1})...))
	f.Add(ctEntryMsg(0x0101, 1, ctEntryAttrs(ctSrc, ctDst, nil)...))
	f.Add(errMsg(1, 2))
	f.Fuzz(func(t *testing.T, b []byte) {
		msgs, _ := splitMessages(b)
		for _, m := range msgs {
			mark, found, err := ctAnswer(m, ctSrc, ctDst)
			if err != nil && (found || mark != 0) {
				t.Fatalf("ctAnswer = %#x, %v, %v: an entry and an error", mark, found, err)
			}
			if !found && mark != 0 {
				t.Fatalf("ctAnswer = %#x, not found: a mark without an entry", mark)
			}
		}
	})
}
