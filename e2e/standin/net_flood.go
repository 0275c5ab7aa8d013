//go:build e2e

package main

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
)

// probeDNSFlood sends N queries of one type as fast as CONC workers get answers, each for NAME
// with %d replaced by the query's index: the flood an agent uses to fill netd's logs.
//
//	claude net dnsflood SERVER:PORT NAME N [TYPE] [CONC]
//
// It prints how many queries were sent and answered, by rcode; ok when every one was answered.
func probeDNSFlood(args []string) map[string]any {
	if len(args) < 3 {
		return map[string]any{"ok": false, "error": "need SERVER:PORT NAME N [TYPE] [CONC]"}
	}
	n, err := benchCount(args[2])
	if err != nil {
		return failed(err)
	}
	qtype, conc := dns.TypeA, 4
	if len(args) > 3 {
		t, ok := dns.StringToType[strings.ToUpper(args[3])]
		if !ok {
			return map[string]any{"ok": false, "error": "unknown type " + args[3]}
		}
		qtype = t
	}
	if len(args) > 4 {
		if conc, err = benchCount(args[4]); err != nil {
			return failed(err)
		}
	}
	server, name := args[0], args[1]
	c := &dns.Client{Timeout: 3 * time.Second}
	var mu sync.Mutex
	rcodes := map[string]int{}
	rep := timed(n, conc, func(i int) error {
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(strings.ReplaceAll(name, "%d", fmt.Sprint(i))), qtype)
		r, _, err := c.Exchange(m, server)
		if err != nil {
			return err
		}
		mu.Lock()
		rcodes[dns.RcodeToString[r.Rcode]]++
		mu.Unlock()
		return nil
	})
	return map[string]any{"ok": rep.OK, "sent": n, "answered": n - rep.Errors, "error": rep.Error,
		"rcodes": rcodes, "per_s": int(rep.PerS)}
}

// probeConnFlood opens N TCP connections to ADDR:PORT, CONC at a time, and holds every one the
// server keeps: the flood of idle connections an agent uses to run a listener of netd's out of
// memory. A connection reset or closed within moments counts as refused.
//
//	claude net connflood ADDR:PORT N [CONC]
//
// It prints how many were tried, held to the end and refused; ok once all were tried.
func probeConnFlood(args []string) map[string]any {
	if len(args) < 2 {
		return map[string]any{"ok": false, "error": "need ADDR:PORT N [CONC]"}
	}
	n, err := benchCount(args[1])
	if err != nil {
		return failed(err)
	}
	conc := 128
	if len(args) > 2 {
		if conc, err = benchCount(args[2]); err != nil {
			return failed(err)
		}
	}
	var mu sync.Mutex
	var held []net.Conn
	refused := 0
	closed := func(c net.Conn, wait time.Duration) bool {
		c.SetReadDeadline(time.Now().Add(wait))
		_, err := c.Read(make([]byte, 1))
		var ne net.Error
		return !(errors.As(err, &ne) && ne.Timeout())
	}
	timed(n, conc, func(int) error {
		c, err := net.DialTimeout("tcp", args[0], 5*time.Second)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err != nil:
			refused++
		case closed(c, 20*time.Millisecond):
			c.Close()
			refused++
		default:
			held = append(held, c)
		}
		return nil
	})
	time.Sleep(time.Second)
	kept := 0
	timed(len(held), conc, func(i int) error {
		gone := closed(held[i], 20*time.Millisecond)
		held[i].Close()
		mu.Lock()
		defer mu.Unlock()
		if gone {
			refused++
		} else {
			kept++
		}
		return nil
	})
	return map[string]any{"ok": true, "tried": n, "held": kept, "refused": refused}
}
