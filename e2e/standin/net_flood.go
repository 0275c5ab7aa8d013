//go:build e2e

package main

import (
	"fmt"
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
