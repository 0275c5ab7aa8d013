//go:build e2e

package main

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
)

const redteam5Usage = `       claude net rt5-udpflood SERVER:PORT NAME RATE SECONDS   A queries for NAME (the index replaces percent-d), RATE a
                                                   second for SECONDS, sent without waiting for answers
The fifth red team's probes (e2e/attack_redteam5_test.go).`

// redteam5Probe runs one of the fifth red team's probes; ok is false for another mode.
func redteam5Probe(args []string) (map[string]any, bool) {
	switch args[0] {
	case "rt5-udpflood":
		return probeUDPFlood(args[1:]), true
	}
	return nil, false
}

// probeUDPFlood sends RATE queries a second for SECONDS from 16 sockets, each for NAME with %d
// replaced by the query's index, and never waits for an answer: every query netd must ask
// upstream holds one of its goroutines (and an upstream socket) for as long as that takes. It
// counts the answers that come back while it sends and for 2 s after.
func probeUDPFlood(args []string) map[string]any {
	if len(args) < 4 {
		return map[string]any{"ok": false, "error": "need SERVER:PORT NAME RATE SECONDS"}
	}
	rate, err := benchCount(args[2])
	if err != nil {
		return failed(err)
	}
	secs, err := benchCount(args[3])
	if err != nil {
		return failed(err)
	}
	const socks = 16
	var conns []*net.UDPConn
	for range socks {
		c, err := net.Dial("udp", args[0])
		if err != nil {
			return failed(err)
		}
		conns = append(conns, c.(*net.UDPConn))
	}
	var answered, sendErrs atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 4096)
			for {
				c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
				if _, err := c.Read(buf); err == nil {
					answered.Add(1)
					continue
				}
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
	}
	sent := 0
	start := time.Now()
	tick := 10 * time.Millisecond
	per := max(rate/100, 1)
	for time.Since(start) < time.Duration(secs)*time.Second {
		next := time.Now().Add(tick)
		for range per {
			m := new(dns.Msg)
			m.SetQuestion(dns.Fqdn(strings.ReplaceAll(args[1], "%d", fmt.Sprint(sent))), dns.TypeA)
			b, _ := m.Pack()
			if _, err := conns[sent%socks].Write(b); err != nil {
				sendErrs.Add(1)
			}
			sent++
		}
		time.Sleep(time.Until(next))
	}
	time.Sleep(2 * time.Second)
	close(stop)
	wg.Wait()
	for _, c := range conns {
		c.Close()
	}
	return map[string]any{"ok": true, "sent": sent, "answered": answered.Load(), "send_errors": sendErrs.Load(),
		"per_s": int(float64(sent) / time.Since(start).Seconds())}
}
