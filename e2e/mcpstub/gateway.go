//go:build e2e

package main

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/pflag"
)

// gatewayFlags are docker/mcp-gateway's `gateway run` flags. The stub acts on transport, port,
// host, allow-unauthenticated, servers, tools, catalog, additional-catalog, secrets, and for
// the servers it spawns long-lived, cpus and memory; it accepts and logs the rest so that
// abox's real argv runs unchanged.
type gatewayFlags struct {
	transport, host, secrets, profile, memory, logFile string
	port, cpus                                         int
	servers, tools, catalogs, additionalCatalogs       []string
	other                                              map[string]any // accepted, only logged
	allowUnauthenticated, longLived                    bool
}

func parseGatewayFlags(args []string, stderr io.Writer) (gatewayFlags, error) {
	var f gatewayFlags
	fs := pflag.NewFlagSet("gateway", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.transport, "transport", "stdio", "stdio, sse or streaming (the stub serves only streaming)")
	fs.IntVar(&f.port, "port", 0, "TCP port (0: 8811)")
	fs.StringVar(&f.host, "host", "", "bind address")
	fs.BoolVar(&f.allowUnauthenticated, "allow-unauthenticated", false, "serve without a bearer token")
	fs.StringSliceVar(&f.servers, "servers", nil, "servers to enable")
	fs.StringSliceVar(&f.tools, "tools", nil, "tools to enable: tool, server:tool, server:*, *")
	fs.StringSliceVar(&f.catalogs, "catalog", nil, "catalog files")
	fs.StringSliceVar(&f.additionalCatalogs, "additional-catalog", nil, "more catalog files")
	fs.StringVar(&f.secrets, "secrets", "docker-desktop", "colon-separated secret sources")
	fs.StringVar(&f.profile, "profile", "", "profile (not supported by the stub)")
	fs.IntVar(&f.cpus, "cpus", 1, "CPUs per server")
	fs.StringVar(&f.memory, "memory", "2Gb", "memory per server")
	fs.StringVar(&f.logFile, "log", "", "also log to this file")
	fs.BoolVar(&f.longLived, "long-lived", false, "keep each spawned server's container for the MCP session")
	f.other = map[string]any{}
	for _, name := range []string{"enable-all-servers", "log-calls", "block-secrets", "block-network",
		"verify-signatures", "dry-run", "verbose", "debug-dns", "watch", "static"} {
		f.other[name] = fs.Bool(name, false, "accepted and logged")
	}
	for _, name := range []string{"registry", "additional-registry", "config", "additional-config",
		"tools-config", "additional-tools-config", "interceptor", "oci-ref", "mcp-registry"} {
		f.other[name] = fs.StringSlice(name, nil, "accepted and logged")
	}
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if !fs.Changed("servers") {
		f.servers = nil // nil: every built-in server; an explicit empty list enables none
	}
	switch f.transport {
	case "streaming", "streamable", "streamable-http", "http":
	default:
		return f, fmt.Errorf("--transport=%s: the stub serves only streaming", f.transport)
	}
	if f.profile != "" {
		return f, errors.New("--profile: the stub has no profiles (use file mode, as abox does)")
	}
	if f.port == 0 {
		f.port = 8811
	}
	return f, nil
}

// gateway is a running stub gateway.
type gateway struct {
	name      string
	token     string // empty with --allow-unauthenticated
	tools     []string
	toolsFlag []string // --tools
	env       map[string]string
	secrets   map[string]string // --secrets, by catalog secret name
	log       *slog.Logger
	stderr    io.Writer
	open      atomic.Int64 // MCP sessions initialized and not closed

	spawned      []spawnedServer // catalog servers run as containers
	spawnedTools spawnedTools
	pool         *pool
}

func newGateway(f gatewayFlags, log *slog.Logger, stderr io.Writer) (*gateway, error) {
	cat, err := loadCatalogs(append(f.catalogs, f.additionalCatalogs...), log)
	if err != nil {
		return nil, err
	}
	secrets, err := loadSecrets(f.secrets)
	if err != nil {
		return nil, err
	}
	g := &gateway{log: log, stderr: stderr, env: spawnedEnv(cat, f.servers, secrets), secrets: secrets, toolsFlag: f.tools}
	g.name, _ = os.Hostname()
	g.tools = enabledTools(f.servers, f.tools, cat, log)
	g.spawned = spawnedServers(f.servers, cat)
	g.pool = newPool(nil, f.longLived, log)
	g.pool.deadlock = os.Getenv(ReleaseDeadlockEnv) == "1"
	g.pool.listed = g.spawnedTools.set
	if openInContainer() {
		log.Warn("auth", "off", "MCPSTUB_CONTAINER_AUTH=off and DOCKER_MCP_IN_CONTAINER=1: no bearer check, as before docker/mcp-gateway v0.43.1")
		return g, nil
	}
	if !f.allowUnauthenticated {
		g.token = os.Getenv("MCP_GATEWAY_AUTH_TOKEN")
		if g.token == "" {
			// The real gateway generates one and prints it, so it lands in docker logs.
			g.token = randomToken()
			fmt.Fprintf(stderr, "Use Bearer token: %s\n", g.token)
		}
	}
	return g, nil
}

// OpenEnv makes a deliberately vulnerable build of the stub: with it set to "off" in the image
// and DOCKER_MCP_IN_CONTAINER=1 (which abox passes, and the real image sets), the stub checks
// no bearer token, even with MCP_GATEWAY_AUTH_TOKEN set, as docker/mcp-gateway did in a
// container before v0.43.1 (docker/mcp-gateway#243). The e2e tests prove abox refuses it.
const OpenEnv = "MCPSTUB_CONTAINER_AUTH"

func openInContainer() bool {
	return os.Getenv(OpenEnv) == "off" && os.Getenv("DOCKER_MCP_IN_CONTAINER") == "1"
}

func randomToken() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 50)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

// handler serves /health without authentication, /mcp behind the bearer token, and redirects
// every other authenticated path to /mcp, with the real gateway's status codes.
//
// server/discover (SEP-2575, protocol 2026-07-28), which Claude Code sends before initialize:
// the contract doc says nothing about it. The stub's go-sdk answers it; the real gateway's
// go-sdk v1.4.1 predates the method. The stub does not model that difference because nothing
// depends on it: netd never forwards server/discover (it answers -32601 itself, so no e2e path
// through netd reaches the stub with one), and abox's probe, a go-sdk client that sends it
// first, goes on with initialize whatever the answer.
func (g *gateway) handler() http.Handler {
	mcpHandler := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		return g.newMCPServer(caller{remote: r.RemoteAddr, userAgent: r.UserAgent()})
	}, nil)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		auth := g.serve(rec, r, mcpHandler)
		g.log.Info("http", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr, "auth", auth, "status", rec.status,
			"user_agent", r.UserAgent())
	})
}

func (g *gateway) serve(w http.ResponseWriter, r *http.Request, mcpHandler http.Handler) (auth string) {
	if r.URL.Path == "/health" {
		w.WriteHeader(http.StatusOK)
		return "none"
	}
	auth = g.checkAuth(r)
	if auth != "ok" && auth != "off" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="MCP Gateway"`)
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return auth
	}
	if origin := r.Header.Get("Origin"); origin != "" && !localOrigin(origin) {
		http.Error(w, "Forbidden", http.StatusForbidden)
		return auth
	}
	if r.URL.Path != "/mcp" {
		http.Redirect(w, r, "/mcp", http.StatusTemporaryRedirect)
		return auth
	}
	if r.Method == http.MethodPost && r.Header.Get("Content-Type") != "application/json" {
		http.Error(w, "Unsupported Media Type", http.StatusUnsupportedMediaType)
		return auth
	}
	mcpHandler.ServeHTTP(w, r)
	return auth
}

// checkAuth accepts exactly "Authorization: Bearer <token>", compared in constant time.
func (g *gateway) checkAuth(r *http.Request) string {
	if g.token == "" {
		return "off"
	}
	h := r.Header.Get("Authorization")
	if h == "" {
		return "missing"
	}
	got, ok := strings.CutPrefix(h, "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(g.token)) != 1 {
		return "bad"
	}
	return "ok"
}

func localOrigin(origin string) bool {
	for _, h := range []string{"localhost", "127.0.0.1", "[::1]"} {
		for _, scheme := range []string{"http://", "https://"} {
			if origin == scheme+h || strings.HasPrefix(origin, scheme+h+":") {
				return true
			}
		}
	}
	return false
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// countSessions logs each MCP session once its initialize succeeded, and again when it closes,
// with the number then open: a "session" line with event "open" or "close". Sessions are the
// go-sdk handler's, as in the real gateway: they live until a DELETE (204) closes them, with no
// timeout, and a request naming an unknown or closed session gets the handler's 404 "session not
// found". A session whose first request was not an initialize is closed by the handler at once
// and is never counted.
func (g *gateway) countSessions(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		ss, ok := req.GetSession().(*mcp.ServerSession)
		if method != "initialize" || err != nil || !ok {
			return res, err
		}
		g.log.Info("session", "event", "open", "session", ss.ID(), "open", g.open.Add(1))
		go func() {
			ss.Wait()
			g.log.Info("session", "event", "close", "session", ss.ID(), "open", g.open.Add(-1))
		}()
		return res, err
	}
}

// runGateway serves until ctx ends.
func runGateway(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseGatewayFlags(args, stderr)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(stdout, nil))
	g, err := newGateway(f, log, stderr)
	if err != nil {
		return err
	}
	g.startSpawning(ctx, f)
	defer g.pool.closeAll() // at stop, as the real gateway: every kept container, one by one
	l, err := net.Listen("tcp", net.JoinHostPort(f.host, fmt.Sprint(f.port)))
	if err != nil {
		return err
	}
	log.Info("start", "addr", l.Addr().String(), "transport", f.transport, "servers", f.servers,
		"tools_flag", f.tools, "catalogs", append(f.catalogs, f.additionalCatalogs...), "secrets", f.secrets,
		"auth", g.token != "", "enabled_tools", g.tools, "spawned", g.spawnedNames(), "long_lived", f.longLived,
		"release_deadlock", g.pool.deadlock, "other_flags", f.other)
	srv := &http.Server{Handler: g.handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
