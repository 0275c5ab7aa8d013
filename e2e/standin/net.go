//go:build e2e

package main

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"
)

const netUsage = `usage: claude net dns SERVER:PORT NAME [TYPE] [tcp]    one DNS query, straight to SERVER
       claude net tcp ADDR:PORT [SEND]                    connect, send, print what comes back
       claude net udp ADDR:PORT DATA                      send one datagram, wait for a reply
       claude net tls ADDR:PORT [SNI|-] [HOST]            TLS with that server name (- for none), GET /
       claude net tls-from LPORT ADDR:PORT SNI           the same from local port LPORT
       claude net http ADDR:PORT HOST                     plain HTTP GET / with that Host header
       claude net dnsflood SERVER:PORT NAME N [TYPE] [CONC]  N queries of one type, see net_flood.go
       claude net connflood ADDR:PORT N [CONC]            N connections, each held while it lasts
       claude net dnsbench|tlsbench|getbench …            bench modes, see net_bench.go
The adversary's network toolkit for the e2e attack tests: every probe prints one JSON line
{"ok":…,"error":…,…} and exits 0 when it got through, 1 when it did not.`

// netProbe runs one network probe, bypassing the system resolver and the agent's tools, so a
// test can aim at an exact address, port or server name.
func netProbe(args []string, stdout, stderr io.Writer) int {
	if len(args) < 2 {
		fmt.Fprintln(stderr, netUsage)
		return 2
	}
	if isNetBench(args[0]) {
		return netBench(args, stdout, stderr)
	}
	var res map[string]any
	switch args[0] {
	case "dns":
		res = probeDNS(args[1:])
	case "dnsflood":
		res = probeDNSFlood(args[1:])
	case "connflood":
		res = probeConnFlood(args[1:])
	case "tcp":
		res = probeTCP(args[1:])
	case "udp":
		res = probeUDP(args[1:])
	case "tls":
		res = probeTLS(args[1:])
	case "tls-from":
		res = probeTLSFrom(args[1:])
	case "http":
		res = probeHTTP(args[1:])
	default:
		var ok bool
		if res, ok = nsProbe(args); !ok {
			if res, ok = gateProbe(args); !ok {
				if res, ok = echProbe(args); !ok {
					if res, ok = redteam5Probe(args); !ok {
						fmt.Fprintln(stderr, netUsage+"\n"+nsUsage+"\n"+ns2Usage+"\n"+gateUsage+"\n"+redteam2Usage+"\n"+echUsage+"\n"+redteam5Usage)
						return 2
					}
				}
			}
		}
	}
	b, _ := json.Marshal(res)
	fmt.Fprintln(stdout, string(b))
	if res["ok"] == true {
		return 0
	}
	return 1
}

func failed(err error) map[string]any { return map[string]any{"ok": false, "error": err.Error()} }

func probeDNS(args []string) map[string]any {
	if len(args) < 2 {
		return map[string]any{"ok": false, "error": "need SERVER:PORT NAME"}
	}
	qtype := dns.TypeA
	if len(args) > 2 {
		if t, ok := dns.StringToType[strings.ToUpper(args[2])]; ok {
			qtype = t
		}
	}
	c := &dns.Client{Timeout: 3 * time.Second}
	if len(args) > 3 && args[3] == "tcp" {
		c.Net = "tcp"
	}
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(args[1]), qtype)
	r, _, err := c.Exchange(m, args[0])
	if err != nil {
		return failed(err)
	}
	var answers []string
	for _, rr := range r.Answer {
		if a, ok := rr.(*dns.A); ok {
			answers = append(answers, a.A.String())
		}
	}
	return map[string]any{"ok": r.Rcode == dns.RcodeSuccess && len(answers) > 0, "rcode": dns.RcodeToString[r.Rcode], "answers": answers}
}

func probeTCP(args []string) map[string]any {
	conn, err := net.DialTimeout("tcp", args[0], 5*time.Second)
	if err != nil {
		return failed(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if len(args) > 1 {
		fmt.Fprintln(conn, args[1])
	}
	line, _ := bufio.NewReader(conn).ReadString('\n')
	return map[string]any{"ok": true, "reply": strings.TrimSpace(line)}
}

func probeUDP(args []string) map[string]any {
	if len(args) < 2 {
		return map[string]any{"ok": false, "error": "need ADDR:PORT DATA"}
	}
	conn, err := net.DialTimeout("udp", args[0], 3*time.Second)
	if err != nil {
		return failed(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := conn.Write([]byte(args[1])); err != nil {
		return failed(err)
	}
	buf := make([]byte, 2048)
	n, err := conn.Read(buf)
	if err != nil {
		return failed(err)
	}
	return map[string]any{"ok": true, "reply": string(buf[:n])}
}

// probeTLS connects to ADDR, sends a ClientHello with the given server name (or none), skips
// certificate checks (the point is where the connection lands, not whom to trust) and GETs /
// with Host set to HOST, or to the server name.
func probeTLS(args []string) map[string]any {
	sni, host := "", ""
	if len(args) > 1 && args[1] != "-" {
		sni = args[1]
	}
	host = sni
	if len(args) > 2 {
		host = args[2]
	}
	return tlsGet(&net.Dialer{Timeout: 5 * time.Second}, "tcp", args[0], sni, host)
}

// tlsGet dials addr with d, makes the TLS handshake naming sni and sends GET / with Host host.
func tlsGet(d *net.Dialer, network, addr, sni, host string) map[string]any {
	conn, err := tls.DialWithDialer(d, network, addr, &tls.Config{ServerName: sni, InsecureSkipVerify: true})
	if err != nil {
		return failed(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", host)
	body, _ := io.ReadAll(conn)
	return map[string]any{"ok": true, "reply": lastLine(string(body))}
}

// probeTLSFrom is probeTLS from a local port of the caller's choosing, outside the range the
// kernel picks from when it chooses.
func probeTLSFrom(args []string) map[string]any {
	if len(args) < 3 {
		return map[string]any{"ok": false, "error": "need LPORT ADDR:PORT SNI"}
	}
	lport, err := strconv.Atoi(args[0])
	if err != nil {
		return failed(err)
	}
	d := &net.Dialer{Timeout: 5 * time.Second, Control: reuseAddr, LocalAddr: &net.TCPAddr{Port: lport}}
	return tlsGet(d, "tcp4", args[1], args[2], args[2])
}

// probeHTTP sends a plain HTTP/1.1 request with the given Host to ADDR and reports the status
// line; ok means a 2xx answer.
func probeHTTP(args []string) map[string]any {
	if len(args) < 2 {
		return map[string]any{"ok": false, "error": "need ADDR:PORT HOST"}
	}
	conn, err := net.DialTimeout("tcp", args[0], 5*time.Second)
	if err != nil {
		return failed(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", args[1])
	status, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return failed(err)
	}
	status = strings.TrimSpace(status)
	return map[string]any{"ok": strings.Contains(status, " 2"), "reply": status}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
