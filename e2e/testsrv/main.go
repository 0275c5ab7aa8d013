//go:build e2e

// Command testsrv is "the internet" of the e2e tests: one static binary, run in a FROM scratch
// container on a test network under one or more --network-alias names, that answers on every
// protocol an agent might use to get out.
//
//   - HTTPS on 443 with certificates from the test CA (testca), for the names given by -names or,
//     without -names, for whatever server name the client sends;
//   - plain HTTP on 80;
//   - TCP listeners (2222, 2223) that send a banner naming the server, then echo;
//   - on request (-raw-ports), TCP listeners that send nothing and log every byte they receive,
//     as it arrives: a test can prove that not one byte of a connection got there;
//   - UDP echo (2222);
//   - an authoritative DNS server on 53 (udp and tcp) that answers every A query with one address;
//   - on request (-ech-public-name), Encrypted Client Hello on the HTTPS port: the server a
//     client names inside its encrypted hello is the one served, as on a CDN that fronts many.
//
// Every HTTP(S) reply names the server and the Host and SNI it saw, so a test can prove where a
// connection landed; GET /bytes/<n> serves n bytes for throughput benchmarks. Every connection,
// request, datagram and query is logged as one JSON line on stdout, so a test can also prove that
// something never arrived.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "testsrv: error:", err)
		os.Exit(1)
	}
}

type options struct {
	name      string
	names     []string
	caDir     string
	httpsPort int
	httpPort  int
	tcpPorts  []int
	rawPorts  []int
	udpPorts  []int
	dnsPort   int
	dnsAnswer string
	dnsTTL    uint
	dnsSpread int
	dnsMap    string
	dnsDelay  time.Duration
	echName   string
}

func parseFlags(args []string) (options, error) {
	var o options
	host, _ := os.Hostname()
	fs := flag.NewFlagSet("testsrv", flag.ContinueOnError)
	fs.StringVar(&o.name, "name", host, "the name this server reports in banners and bodies")
	names := fs.String("names", "", "comma-separated certificate names (default: any server name a client sends)")
	fs.StringVar(&o.caDir, "ca-dir", "/ca", "directory holding the test CA's ca.crt and ca.key")
	fs.IntVar(&o.httpsPort, "https-port", 443, "HTTPS port (0: off)")
	fs.IntVar(&o.httpPort, "http-port", 80, "HTTP port (0: off)")
	tcp := fs.String("tcp-ports", "2222,2223", "comma-separated TCP banner/echo ports")
	udp := fs.String("udp-ports", "2222", "comma-separated UDP echo ports")
	raw := fs.String("raw-ports", "", "comma-separated TCP ports that say nothing and log every byte received")
	fs.IntVar(&o.dnsPort, "dns-port", 53, "DNS port, udp and tcp (0: off)")
	fs.StringVar(&o.dnsAnswer, "dns-answer", "", "IPv4 address every A query gets (default: this server's)")
	fs.UintVar(&o.dnsTTL, "dns-ttl", 60, "TTL of DNS answers")
	fs.IntVar(&o.dnsSpread, "dns-spread", 0, "answer each A query with this many addresses of 198.18.0.0/15 instead, "+
		"different for every name (and for every query of a name starting with \"rot\"); nothing ever connects to them")
	fs.StringVar(&o.dnsMap, "dns-map", "", "file of \"name address\" lines, read again for every query: an A query of a listed "+
		"name gets that address instead (lets a test point names at addresses it learns late)")
	fs.DurationVar(&o.dnsDelay, "dns-delay", 0, "wait this long before each DNS answer (a slow upstream)")
	fs.StringVar(&o.echName, "ech-public-name", "", "decrypt Encrypted Client Hellos on the HTTPS port under a new key whose config "+
		"names this public name, logged as ech-config (HTTPS then needs TLS 1.3)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	o.names = splitList(*names)
	var err error
	if o.tcpPorts, err = parsePorts(*tcp); err != nil {
		return o, fmt.Errorf("-tcp-ports: %w", err)
	}
	if o.udpPorts, err = parsePorts(*udp); err != nil {
		return o, fmt.Errorf("-udp-ports: %w", err)
	}
	if o.rawPorts, err = parsePorts(*raw); err != nil {
		return o, fmt.Errorf("-raw-ports: %w", err)
	}
	return o, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func parsePorts(s string) ([]int, error) {
	var ports []int
	for _, f := range splitList(s) {
		p, err := strconv.Atoi(f)
		if err != nil || p < 1 || p > 65535 {
			return nil, fmt.Errorf("%q is not a port", f)
		}
		ports = append(ports, p)
	}
	return ports, nil
}

func run(args []string) error {
	o, err := parseFlags(args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil)).With("server", o.name)
	s := &server{name: o.name, log: log}
	if o.httpsPort != 0 {
		if s.certs, err = newCertSource(o.caDir, o.names); err != nil {
			return err
		}
	}
	if o.echName != "" {
		if err := s.setupECH(o.echName); err != nil {
			return err
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := s.listen(ctx, o); err != nil {
		return err
	}
	log.Info("ready")
	<-ctx.Done()
	log.Info("stopping")
	return nil
}

// listen opens every listener o asks for and serves each in its own goroutine.
func (s *server) listen(ctx context.Context, o options) error {
	if o.httpsPort != 0 {
		l, err := net.Listen("tcp", fmt.Sprintf(":%d", o.httpsPort))
		if err != nil {
			return err
		}
		go s.serveHTTPS(l)
	}
	if o.httpPort != 0 {
		l, err := net.Listen("tcp", fmt.Sprintf(":%d", o.httpPort))
		if err != nil {
			return err
		}
		go s.serveHTTP(l)
	}
	for _, p := range o.tcpPorts {
		l, err := net.Listen("tcp", fmt.Sprintf(":%d", p))
		if err != nil {
			return err
		}
		go s.serveTCP(l)
	}
	for _, p := range o.rawPorts {
		l, err := net.Listen("tcp", fmt.Sprintf(":%d", p))
		if err != nil {
			return err
		}
		go s.serveRaw(l)
	}
	for _, p := range o.udpPorts {
		pc, err := net.ListenPacket("udp", fmt.Sprintf(":%d", p))
		if err != nil {
			return err
		}
		go s.serveUDP(pc)
	}
	if o.dnsPort != 0 {
		answer, err := dnsAnswer(o.dnsAnswer)
		if err != nil {
			return err
		}
		addr := fmt.Sprintf(":%d", o.dnsPort)
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			return err
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return err
		}
		s.serveDNS(ctx, pc, l, &dnsHandler{s: s, answer: answer, ttl: uint32(o.dnsTTL), spread: o.dnsSpread, mapFile: o.dnsMap, delay: o.dnsDelay})
	}
	return nil
}

// server holds what every protocol handler shares.
type server struct {
	name    string
	log     *slog.Logger
	certs   *certSource
	echKeys []tls.EncryptedClientHelloKey // -ech-public-name's; nil: no ECH
}
