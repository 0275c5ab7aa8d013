//go:build e2e

package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
)

// Event is one JSON log line of testsrv or mcpstub.
type Event map[string]any

// Str returns a field as a string ("" when absent).
func (e Event) Str(key string) string {
	if v, ok := e[key]; ok && v != nil {
		return fmt.Sprint(v)
	}
	return ""
}

// Msg is the event's name: "request", "dns", "call", "http", …
func (e Event) Msg() string { return e.Str("msg") }

// Events returns the JSON log lines of a container, optionally only those named msg.
func (h *H) Events(container string, msg ...string) []Event {
	h.T.Helper()
	res := h.Docker("logs", container)
	var out []Event
	for _, l := range lines(res.Stdout) {
		var ev Event
		if json.Unmarshal([]byte(l), &ev) != nil {
			continue
		}
		if len(msg) == 0 || ev.Msg() == msg[0] {
			out = append(out, ev)
		}
	}
	return out
}

// Traffic returns the events of a testsrv or mcpstub container that record something arriving
// (a connection, request, datagram, query or call): empty means nothing reached it.
func (h *H) Traffic(container string) []Event {
	h.T.Helper()
	var out []Event
	for _, ev := range h.Events(container) {
		switch ev.Msg() {
		case "ready", "listening", "stopping", "start", "catalog", "server", "ech-config":
		default:
			out = append(out, ev)
		}
	}
	return out
}

// waitEvent waits until container logs an event named msg, or fails the test with its logs.
func (h *H) waitEvent(container, msg string, timeout time.Duration) {
	h.T.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if len(h.Events(container, msg)) > 0 {
			return
		}
		state := h.Docker("container", "inspect", "--format", "{{.State.Status}}", container)
		if strings.TrimSpace(state.Stdout) == "exited" || time.Now().After(deadline) {
			logs := h.Docker("logs", "--tail", "30", container)
			h.T.Fatalf("%s never logged %q (state %s)\n%s%s", container, msg, strings.TrimSpace(state.Stdout), logs.Stdout, logs.Stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// start runs a detached container on the test network and remembers it for failure dumps.
func (h *H) start(name string, args []string) {
	h.T.Helper()
	run := append([]string{"run", "-d", "--name", name, "--network", h.Network}, h.labelArgs()...)
	h.MustDocker(append(run, args...)...)
	h.mu.Lock()
	h.started = append(h.started, name)
	h.mu.Unlock()
}

// IP returns a container's address on the test network.
func (h *H) IP(container string) string {
	h.T.Helper()
	return h.MustDocker("container", "inspect", "--format",
		fmt.Sprintf(`{{(index .NetworkSettings.Networks %q).IPAddress}}`, h.Network), container)
}

// Server is a running testsrv container.
type Server struct {
	Container string   // container name
	Name      string   // the name it reports: its first alias
	Aliases   []string // --network-alias names, also its certificate names
	IP        string   // address on the test network
}

// StartServer starts testsrv on the test network under the given --network-alias names (at
// least one) with every protocol on its default port (HTTPS 443, HTTP 80, TCP 2222 and 2223,
// UDP 2222, DNS 53) and a certificate from the test CA for the aliases and their subdomains.
func (h *H) StartServer(aliases ...string) *Server {
	h.T.Helper()
	return h.StartServerWith(ServerOptions{Aliases: aliases})
}

// ServerOptions configure [H.StartServerWith].
type ServerOptions struct {
	Aliases []string // --network-alias names; the first is the name the server reports
	Args    []string // more testsrv flags, e.g. -dns-answer 10.0.0.1 or -tcp-ports 22
}

// StartServerWith starts testsrv as [H.StartServer] does, with extra flags.
func (h *H) StartServerWith(o ServerOptions) *Server {
	h.T.Helper()
	if len(o.Aliases) == 0 {
		h.T.Fatal("StartServer needs at least one alias")
	}
	CA(h.T)
	s := &Server{Container: h.name("srv"), Name: o.Aliases[0], Aliases: o.Aliases}
	args := []string{"-v", CADir(h.T) + ":/ca:ro"}
	for _, a := range o.Aliases {
		args = append(args, "--network-alias", a)
	}
	args = append(args, TestsrvImage(h.T), "-name", s.Name, "-names", strings.Join(o.Aliases, ","))
	h.start(s.Container, append(args, o.Args...))
	h.waitEvent(s.Container, "ready", 30*time.Second)
	s.IP = h.IP(s.Container)
	return s
}

// Gateway is a running mcpstub gateway.
type Gateway struct {
	Container string
	Alias     string // its name on the test network
	IP        string
	Token     string // MCP_GATEWAY_AUTH_TOKEN
	URL       string // http://<alias>:8811/mcp
}

// GatewayOptions configure [H.StartGateway].
type GatewayOptions struct {
	Alias string   // default "gateway.test"
	Token string   // default: a token derived from the test id
	Args  []string // gateway flags after --transport=streaming --port=8811
	// Spawn runs [MCPStubSpawnImage] with the daemon's socket at /var/run/docker.sock and
	// DOCKER_MCP_IN_CONTAINER=1, as abox runs the real gateway: catalog servers it spawns join
	// the test network, so the test's clean-up removes them.
	Spawn  bool
	Env    []string // more environment, NAME=value
	Mounts []string // -v arguments, e.g. a catalog at /root/.docker/mcp/catalogs/<name>.yaml
}

// StartGateway starts the mcpstub gateway on the test network. The token reaches the container
// through the docker CLI's environment, never its argv.
func (h *H) StartGateway(o GatewayOptions) *Gateway {
	h.T.Helper()
	if o.Alias == "" {
		o.Alias = "gateway.test"
	}
	if o.Token == "" {
		o.Token = "e2e-token-" + h.ID
	}
	g := &Gateway{Container: h.name("gw"), Alias: o.Alias, Token: o.Token, URL: "http://" + o.Alias + ":8811/mcp"}
	run := append([]string{"run", "-d", "--name", g.Container, "--network", h.Network, "--network-alias", o.Alias,
		"-e", "MCP_GATEWAY_AUTH_TOKEN"}, h.labelArgs()...)
	image, ready := MCPStubImage(h.T), 30*time.Second
	if o.Spawn {
		// The start-up lists every spawned server through a container of its own.
		image, ready = MCPStubSpawnImage(h.T), 2*time.Minute
		run = append(run, "-v", dockerSocket()+":/var/run/docker.sock", "-e", "DOCKER_MCP_IN_CONTAINER=1")
	}
	for _, e := range o.Env {
		run = append(run, "-e", e)
	}
	for _, m := range o.Mounts {
		run = append(run, "-v", m)
	}
	run = append(run, image, "--transport=streaming", "--port=8811")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := command{name: "docker", args: append(run, o.Args...), env: dockerEnv("MCP_GATEWAY_AUTH_TOKEN=" + o.Token)}.run(ctx)
	if err != nil || !res.OK() {
		h.T.Fatalf("starting the gateway: %v\n%s", err, res)
	}
	h.mu.Lock()
	h.started = append(h.started, g.Container)
	h.mu.Unlock()
	h.waitEvent(g.Container, "start", ready)
	g.IP = h.IP(g.Container)
	return g
}

// dockerSocket is the host path of the daemon's socket: DOCKER_HOST's, if it names one.
func dockerSocket() string {
	if p, ok := strings.CutPrefix(os.Getenv("DOCKER_HOST"), "unix://"); ok {
		return p
	}
	return "/var/run/docker.sock"
}

// MCPConfig returns a Claude Code MCP configuration ({"mcpServers": …}) naming the gateway as
// server "abox", with the bearer token or without any Authorization header.
func (g *Gateway) MCPConfig(withToken bool) string {
	server := map[string]any{"type": "http", "url": g.URL}
	if withToken {
		server["headers"] = map[string]string{"Authorization": "Bearer " + g.Token}
	}
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"abox": server}})
	return string(b)
}

// RunOptions configure a throwaway container.
type RunOptions struct {
	Image   string   // default: ClientImage
	User    string   // --user
	Workdir string   // -w
	Env     []string // NAME=value
	Mounts  []string // -v arguments, host:container[:ro]
	Args    []string // more docker run flags
	Cmd     []string // command and arguments
	Timeout time.Duration
}

// Run runs a throwaway container on the test network (--rm, --init, the test's labels) and
// returns its output.
func (h *H) Run(o RunOptions) Result {
	h.T.Helper()
	if o.Image == "" {
		o.Image = ClientImage(h.T)
	}
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Minute
	}
	name := h.name("run")
	args := append([]string{"run", "--rm", "--init", "--name", name, "--network", h.Network}, h.labelArgs()...)
	if o.User != "" {
		args = append(args, "--user", o.User)
	}
	if o.Workdir != "" {
		args = append(args, "-w", o.Workdir)
	}
	for _, e := range o.Env {
		args = append(args, "-e", e)
	}
	for _, m := range o.Mounts {
		args = append(args, "-v", m)
	}
	args = append(append(append(args, o.Args...), o.Image), o.Cmd...)
	ctx, cancel := context.WithTimeout(context.Background(), o.Timeout)
	defer cancel()
	res, err := docker(ctx, args...)
	if err != nil {
		h.T.Fatalf("docker run %s: %v\n%s", strings.Join(o.Cmd, " "), err, res)
	}
	return res
}

// cleanup removes everything of this test: containers it labelled or that sit on its network
// or carry its workspace's project hash, the network, and its volumes. On failure it first logs
// the tail of every container it started.
func (h *H) cleanup() {
	if h.T.Failed() {
		h.dumpLogs()
	}
	if os.Getenv("ABOX_E2E_KEEP") == "1" {
		h.T.Logf("ABOX_E2E_KEEP=1: keeping network %s and its containers", h.Network)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var containers []string
	for _, filter := range []string{"label=" + LabelTest + "=" + h.ID, "network=" + h.Network, "label=abox.hash=" + h.ProjectHash()} {
		if out, err := dockerOut(ctx, "container", "ls", "-aq", "--filter", filter); err == nil {
			containers = append(containers, lines(out)...)
		}
	}
	removeAll(ctx, []string{"container", "rm", "-f", "-v"}, dedupe(containers))
	removeAll(ctx, []string{"network", "rm"}, []string{h.Network})
	var volumes []string
	for _, filter := range []string{"label=" + LabelTest + "=" + h.ID, "name=" + h.ProjectHash()} {
		if out, err := dockerOut(ctx, "volume", "ls", "-q", "--filter", filter); err == nil {
			volumes = append(volumes, lines(out)...)
		}
	}
	removeAll(ctx, []string{"volume", "rm", "-f"}, dedupe(volumes))
}

func (h *H) dumpLogs() {
	h.mu.Lock()
	started := append([]string(nil), h.started...)
	h.mu.Unlock()
	for _, c := range started {
		res, err := docker(context.Background(), "logs", "--tail", "40", c)
		if err == nil {
			h.T.Logf("--- logs of %s ---\n%s%s", c, res.Stdout, res.Stderr)
		}
	}
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
