//go:build e2e

package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
)

// The bench modes of `claude net` measure many operations inside one process, so that the
// figures of bench/ are about the network path and not about starting a program per operation.
// Each prints one JSON line, a [benchReport], and exits 0 when every operation succeeded. They
// are run the same way inside a sandbox (through netd) and in a plain container (directly), so
// the two figures differ only by the path.

const netBenchUsage = `usage: claude net dnsbench SERVER:PORT NAME N [CONC]   N A queries (NAME may hold %d: the query's index)
       claude net tlsbench ADDR:PORT SNI N              N TLS connections: connect and full handshake
       claude net getbench ADDR:PORT SNI PATH           one HTTPS GET over TLS, body read and counted`

// isNetBench reports whether a `claude net` mode is one of the bench modes.
func isNetBench(mode string) bool {
	return mode == "dnsbench" || mode == "tlsbench" || mode == "getbench"
}

// benchReport is what a bench mode prints: per-operation latencies in microseconds, in the
// order the operations ended.
type benchReport struct {
	OK     bool    `json:"ok"`
	Mode   string  `json:"mode"`
	N      int     `json:"n"`
	Errors int     `json:"errors"`
	Error  string  `json:"error,omitempty"` // the first error
	TotalS float64 `json:"total_s"`
	PerS   float64 `json:"per_s"` // operations per second over the whole run
	Bytes  int64   `json:"bytes,omitempty"`
	MiBS   float64 `json:"mib_s,omitempty"`
	LatUS  []int64 `json:"lat_us,omitempty"`
}

// netBench runs one bench mode; args start with the mode.
func netBench(args []string, stdout, stderr io.Writer) int {
	var rep benchReport
	var err error
	switch args[0] {
	case "dnsbench":
		rep, err = dnsBench(args[1:])
	case "tlsbench":
		rep, err = tlsBench(args[1:])
	case "getbench":
		rep, err = getBench(args[1:])
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		io.WriteString(stderr, netBenchUsage+"\n")
		return 2
	}
	rep.Mode = args[0]
	b, _ := json.Marshal(rep)
	fmt.Fprintln(stdout, string(b))
	if !rep.OK {
		return 1
	}
	return 0
}

// timed runs n operations on conc workers and collects their latencies and errors.
func timed(n, conc int, op func(i int) error) benchReport {
	rep := benchReport{N: n, LatUS: make([]int64, 0, n)}
	var mu sync.Mutex
	var wg sync.WaitGroup
	next := make(chan int)
	start := time.Now()
	for range max(conc, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				t := time.Now()
				err := op(i)
				d := time.Since(t).Microseconds()
				mu.Lock()
				rep.LatUS = append(rep.LatUS, d)
				if err != nil {
					rep.Errors++
					if rep.Error == "" {
						rep.Error = err.Error()
					}
				}
				mu.Unlock()
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	rep.TotalS = time.Since(start).Seconds()
	rep.PerS = float64(n) / rep.TotalS
	rep.OK = rep.Errors == 0
	return rep
}

func benchCount(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("count %q: want a positive number", s)
	}
	return n, nil
}

// dnsBench sends N A queries over UDP, each answered before the next on a worker. A query fails
// unless it gets NOERROR with at least one A record.
func dnsBench(args []string) (benchReport, error) {
	if len(args) < 3 {
		return benchReport{}, fmt.Errorf("dnsbench: need SERVER:PORT NAME N")
	}
	n, err := benchCount(args[2])
	if err != nil {
		return benchReport{}, err
	}
	conc := 1
	if len(args) > 3 {
		if conc, err = benchCount(args[3]); err != nil {
			return benchReport{}, err
		}
	}
	server, name := args[0], args[1]
	c := &dns.Client{Timeout: 3 * time.Second}
	return timed(n, conc, func(i int) error {
		q := name
		if strings.Contains(q, "%d") {
			q = fmt.Sprintf(q, i)
		}
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(q), dns.TypeA)
		r, _, err := c.Exchange(m, server)
		if err != nil {
			return err
		}
		for _, rr := range r.Answer {
			if _, ok := rr.(*dns.A); ok && r.Rcode == dns.RcodeSuccess {
				return nil
			}
		}
		return fmt.Errorf("%s: %s with %d answers", q, dns.RcodeToString[r.Rcode], len(r.Answer))
	}), nil
}

// tlsBench opens N TLS connections one after the other; each operation is the TCP connect and
// the full handshake (no session resumption), then the connection is closed. Certificates are
// not checked: both sides of a comparison do the same work.
func tlsBench(args []string) (benchReport, error) {
	if len(args) < 3 {
		return benchReport{}, fmt.Errorf("tlsbench: need ADDR:PORT SNI N")
	}
	n, err := benchCount(args[2])
	if err != nil {
		return benchReport{}, err
	}
	addr, sni := args[0], args[1]
	addr, err = resolveOnce(addr)
	if err != nil {
		return benchReport{}, err
	}
	cfg := &tls.Config{ServerName: sni, InsecureSkipVerify: true}
	d := &net.Dialer{Timeout: 5 * time.Second}
	return timed(n, 1, func(int) error {
		c, err := tls.DialWithDialer(d, "tcp", addr, cfg)
		if err != nil {
			return err
		}
		return c.Close()
	}), nil
}

// getBench GETs PATH once over TLS with HTTP/1.1 and reads the whole body; the report carries the
// body's size and the rate from the request to the last byte.
func getBench(args []string) (benchReport, error) {
	if len(args) < 3 {
		return benchReport{}, fmt.Errorf("getbench: need ADDR:PORT SNI PATH")
	}
	addr, sni, path := args[0], args[1], args[2]
	addr, err := resolveOnce(addr)
	if err != nil {
		return benchReport{}, err
	}
	var size int64
	rep := timed(1, 1, func(int) error {
		d := &net.Dialer{Timeout: 5 * time.Second}
		c, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{ServerName: sni, InsecureSkipVerify: true})
		if err != nil {
			return err
		}
		defer c.Close()
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", path, sni)
		br := bufio.NewReaderSize(c, 256<<10)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		size, err = io.Copy(io.Discard, resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("GET %s: %s", path, resp.Status)
		}
		return err
	})
	rep.Bytes = size
	if rep.TotalS > 0 {
		rep.MiBS = float64(size) / (1 << 20) / rep.TotalS
	}
	return rep, nil
}

// resolveOnce looks up the host of HOST:PORT once, before anything is timed, as a client that
// resolves a name and then connects does; an address is returned as it is.
func resolveOnce(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	if net.ParseIP(host) != nil {
		return addr, nil
	}
	ips, err := net.DefaultResolver.LookupIP(context.Background(), "ip4", host)
	if err != nil || len(ips) == 0 {
		return "", fmt.Errorf("resolving %s: %v", host, err)
	}
	return net.JoinHostPort(ips[0].String(), port), nil
}
