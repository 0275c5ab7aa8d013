//go:build e2e

package main

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aboxhq/abox/e2e/testca"
)

// certSource hands out server certificates signed by the test CA: one fixed certificate for the
// configured names, or one per requested server name, issued on first use.
type certSource struct {
	ca    *testca.CA
	fixed *tls.Certificate

	mu     sync.Mutex
	issued map[string]*tls.Certificate
}

func newCertSource(caDir string, names []string) (*certSource, error) {
	ca, err := testca.Load(caDir)
	if err != nil {
		return nil, fmt.Errorf("loading the test CA (mount it at -ca-dir): %w", err)
	}
	cs := &certSource{ca: ca, issued: map[string]*tls.Certificate{}}
	if len(names) > 0 {
		var all []string
		for _, n := range names {
			all = append(all, n)
			if net.ParseIP(n) == nil && !strings.HasPrefix(n, "*.") {
				all = append(all, "*."+n)
			}
		}
		c, err := ca.Issue(all...)
		if err != nil {
			return nil, err
		}
		cs.fixed = &c
	}
	return cs, nil
}

// get is a [tls.Config.GetCertificate]. A client that sends no server name gets a certificate
// for this server's name.
func (cs *certSource) get(name string) (*tls.Certificate, error) {
	if cs.fixed != nil {
		return cs.fixed, nil
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if c, ok := cs.issued[name]; ok {
		return c, nil
	}
	c, err := cs.ca.Issue(name)
	if err != nil {
		return nil, err
	}
	cs.issued[name] = &c
	return &c, nil
}

func (s *server) serveHTTPS(l net.Listener) {
	s.log.Info("listening", "proto", "https", "addr", l.Addr().String())
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			s.log.Info("tls-hello", "proto", "https", "sni", hello.ServerName, "remote", hello.Conn.RemoteAddr().String())
			name := hello.ServerName
			if name == "" {
				name = s.name
			}
			return s.certs.get(name)
		},
	}
	if s.echKeys != nil {
		cfg.MinVersion, cfg.EncryptedClientHelloKeys = tls.VersionTLS13, s.echKeys
	}
	srv := s.httpServer("https")
	srv.TLSConfig = cfg
	_ = srv.Serve(tls.NewListener(l, cfg))
}

func (s *server) serveHTTP(l net.Listener) {
	s.log.Info("listening", "proto", "http", "addr", l.Addr().String())
	_ = s.httpServer("http").Serve(l)
}

func (s *server) httpServer(proto string) *http.Server {
	return &http.Server{
		Handler:           s.handler(proto),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
}

// handler serves:
//
//	GET /bytes/<n>  n bytes of filler, for throughput
//	GET /headers    the request headers as JSON
//	GET /drip/<s>   a line every 200 ms for s seconds, each flushed (a long download)
//	POST /sink      reads the body line by line, logging each as http-data (a long upload)
//	anything else   one line naming this server and the Host and SNI it saw
func (s *server) handler(proto string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sni, ech := "", false
		if r.TLS != nil {
			sni, ech = r.TLS.ServerName, r.TLS.ECHAccepted
		}
		s.log.Info("request", "proto", proto, "method", r.Method, "host", r.Host, "sni", sni, "ech", ech,
			"path", r.URL.Path, "remote", r.RemoteAddr, "user_agent", r.UserAgent())
		w.Header().Set("X-Testsrv", s.name)
		switch {
		case strings.HasPrefix(r.URL.Path, "/bytes/"):
			s.serveBytes(w, strings.TrimPrefix(r.URL.Path, "/bytes/"))
		case strings.HasPrefix(r.URL.Path, "/drip/"):
			s.serveDrip(w, r, strings.TrimPrefix(r.URL.Path, "/drip/"))
		case r.URL.Path == "/sink" && r.Method == http.MethodPost:
			s.serveSink(w, r, proto)
		case r.URL.Path == "/headers":
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(r.Header)
		default:
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			fmt.Fprintf(w, "testsrv name=%s proto=%s host=%s sni=%s path=%s%s\n", s.name, proto, r.Host, sni, r.URL.Path, echNote(ech))
		}
	})
}

// serveDrip writes a numbered line every 200 ms for the given seconds, flushing each.
func (s *server) serveDrip(w http.ResponseWriter, r *http.Request, arg string) {
	secs, err := strconv.Atoi(arg)
	if err != nil || secs < 0 || secs > 600 {
		http.Error(w, "want /drip/<seconds>", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	rc := http.NewResponseController(w)
	for i := 0; i < secs*5; i++ {
		if _, err := fmt.Fprintf(w, "drip %d from %s\n", i, s.name); err != nil || rc.Flush() != nil {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// serveSink reads the request body line by line as it arrives, logging each, and answers with
// how many lines it read.
func (s *server) serveSink(w http.ResponseWriter, r *http.Request, proto string) {
	sc := bufio.NewScanner(r.Body)
	n := 0
	for sc.Scan() {
		n++
		s.log.Info("http-data", "proto", proto, "host", r.Host, "remote", r.RemoteAddr, "data", clip(sc.Text()))
	}
	fmt.Fprintf(w, "testsrv name=%s sink lines=%d\n", s.name, n)
}

var filler = []byte(strings.Repeat("abox-e2e-bulk-data-0123456789abc\n", 2048)) // 64 KiB

func (s *server) serveBytes(w http.ResponseWriter, arg string) {
	n, err := strconv.ParseInt(arg, 10, 64)
	if err != nil || n < 0 {
		http.Error(w, "want /bytes/<count>", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
	for n > 0 {
		chunk := filler
		if int64(len(chunk)) > n {
			chunk = chunk[:n]
		}
		if _, err := w.Write(chunk); err != nil {
			return
		}
		n -= int64(len(chunk))
	}
}

// echNote marks the reply to a request whose hello was an encrypted one this server decrypted.
func echNote(accepted bool) string {
	if accepted {
		return " ech=accepted"
	}
	return ""
}
