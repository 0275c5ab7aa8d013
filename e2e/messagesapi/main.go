//go:build e2e

// Command messagesapi stands in for the Anthropic Messages API, so that the real Claude Code
// can run in the sandbox with nothing but a test server on the other end.
//
// It serves HTTPS on -port with a certificate from the test CA (e2e/testca) for -names; the
// agent reaches it through netd like any allowed host, with ANTHROPIC_BASE_URL pointing at it
// and a dummy ANTHROPIC_API_KEY.
//
//   - POST /v1/messages answers as the real API does: with "stream": true, server-sent events
//     (message_start, content_block_start, ping, content_block_delta with text_delta or
//     input_json_delta, content_block_stop, message_delta with stop_reason and usage,
//     message_stop); without it, one message object.
//   - POST /v1/messages/count_tokens answers {"input_tokens": n}.
//   - Anything else gets the API's 404 error object.
//   - As the API's servers do, it fetches every URL source a POST body names (an object
//     {"type": "url", "url": ...} anywhere in it) before it answers, so that a test's host sees
//     what the real API would send it.
//   - A request for the model claude-test-slow is answered after 30 s, as a long non-streamed
//     completion is: a client may hang up before the headers, having spent it. It is logged on
//     arrival (answer "received: …") as well as when it is over.
//
// A request that offers the Bash tool and whose last prompt is a script is the agent's
// conversation; its answer is scripted by the prompt (see [script]). Any other request (a title
// or topic request to a small model, a subagent's warm-up) is a side request and gets a short
// plain answer.
//
// Every request is appended whole to -log as one JSON line ([record]: path, headers with the
// credential replaced by its fingerprint, the body as sent), so a test can inspect what the client
// offered the model; a one-line summary of each also goes to stdout as JSON.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/aboxhq/abox/e2e/testca"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "messagesapi: error:", err)
		os.Exit(1)
	}
}

type options struct {
	names   []string
	caDir   string
	port    int
	logPath string
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("messagesapi", flag.ContinueOnError)
	names := fs.String("names", "", "comma-separated certificate names (required)")
	fs.StringVar(&o.caDir, "ca-dir", "/ca", "directory holding the test CA's ca.crt and ca.key")
	fs.IntVar(&o.port, "port", 443, "HTTPS port")
	fs.StringVar(&o.logPath, "log", "/log/requests.jsonl", "file every request is appended to, one JSON line each")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	for _, n := range strings.Split(*names, ",") {
		if n = strings.TrimSpace(n); n != "" {
			o.names = append(o.names, n)
		}
	}
	if len(o.names) == 0 {
		return o, errors.New("-names is required")
	}
	return o, nil
}

func run(args []string) error {
	o, err := parseFlags(args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	ca, err := testca.Load(o.caDir)
	if err != nil {
		return fmt.Errorf("loading the test CA (mount it at -ca-dir): %w", err)
	}
	cert, err := ca.Issue(o.names...)
	if err != nil {
		return err
	}
	rl, err := openRequestLog(o.logPath)
	if err != nil {
		return err
	}
	defer rl.close()
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	api := &api{log: log, requests: rl}
	l, err := net.Listen("tcp", fmt.Sprintf(":%d", o.port))
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           api,
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}},
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	log.Info("ready", "names", o.names, "port", o.port)
	if err := srv.ServeTLS(l, "", ""); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
