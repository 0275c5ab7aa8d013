package docker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
)

// Client runs docker commands through a [Runner]: it traces each argv, turns a non-zero exit
// into an [*ExitError], and offers typed helpers that build small argvs and decode the output.
// A Client is safe for concurrent use when its Runner and trace writer are.
type Client struct {
	r     Runner
	trace io.Writer
	mu    sync.Mutex // serialises trace lines
}

// NewClient returns a Client running r. When trace is not nil (`--verbose`), every argv is
// written to it as "+ docker <argv>" before it runs.
func NewClient(r Runner, trace io.Writer) *Client {
	return &Client{r: r, trace: trace}
}

// Run traces and runs inv. A non-zero exit status becomes an [*ExitError]; the [Result] is
// returned either way.
func (c *Client) Run(ctx context.Context, inv Invocation) (Result, error) {
	c.traceArgv(inv)
	res, err := c.r.Run(ctx, inv)
	if err != nil {
		return res, err
	}
	if res.ExitCode != 0 {
		return res, newExitError(inv.Args, res)
	}
	return res, nil
}

// output runs args with no input and returns stdout.
func (c *Client) output(ctx context.Context, args ...string) ([]byte, error) {
	res, err := c.Run(ctx, Invocation{Args: args})
	return res.Stdout, err
}

// run runs args with no input and discards stdout.
func (c *Client) run(ctx context.Context, args ...string) error {
	_, err := c.output(ctx, args...)
	return err
}

// inspectJSON runs args (an inspect command printing `{{json .}}`) and decodes the one object it
// prints into v.
func (c *Client) inspectJSON(ctx context.Context, v any, args ...string) error {
	out, err := c.output(ctx, args...)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(bytes.TrimSpace(out), v); err != nil {
		return fmt.Errorf("docker %s: decoding output: %w", commandName(args), err)
	}
	return nil
}

// idFrom returns the ID a create command printed: the last non-empty line of stdout.
func idFrom(args []string, out []byte) (string, error) {
	lines := strings.Fields(string(out))
	if len(lines) == 0 {
		return "", fmt.Errorf("docker %s: printed no ID", commandName(args))
	}
	return lines[len(lines)-1], nil
}

// labelArgs returns "--label k=v" pairs sorted by key, so that the argv is deterministic.
func labelArgs(labels map[string]string) []string {
	var args []string
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		args = append(args, "--label", k+"="+labels[k])
	}
	return args
}

// Version is what [Client.Version] reports.
type Version struct {
	Client    string // CLI version, e.g. "28.2.2"
	ClientAPI string // API version the CLI negotiated, e.g. "1.41"
	Server    string // Engine version, e.g. "20.10.24+dfsg1"
	ServerAPI string // highest API version the Engine speaks
}

// Version returns the CLI and Engine versions. It fails with [ErrDaemonUnreachable] when no
// daemon answers.
func (c *Client) Version(ctx context.Context) (Version, error) {
	// Both CLI 20.10 and 28 print Client and Server objects with Version and ApiVersion.
	var v struct {
		Client, Server *struct{ Version, APIVersion string }
	}
	if err := c.inspectJSON(ctx, &v, "version", "--format", "{{json .}}"); err != nil {
		return Version{}, err
	}
	if v.Client == nil || v.Server == nil {
		return Version{}, fmt.Errorf("docker version: no server version in output")
	}
	return Version{
		Client: v.Client.Version, ClientAPI: v.Client.APIVersion,
		Server: v.Server.Version, ServerAPI: v.Server.APIVersion,
	}, nil
}

// traceArgv writes "+ [ENV=v …] docker <argv>" to the trace writer, quoting each argument that
// a shell would split or expand. The quoting is for reading; nothing here is ever run by a shell.
func (c *Client) traceArgv(inv Invocation) {
	if c.trace == nil {
		return
	}
	var b strings.Builder
	b.WriteString("+ ")
	for _, e := range inv.Env {
		b.WriteString(ShellQuote(e) + " ")
	}
	b.WriteString("docker")
	for _, a := range inv.Args {
		b.WriteString(" " + ShellQuote(a))
	}
	b.WriteString("\n")
	c.mu.Lock()
	defer c.mu.Unlock()
	_, _ = io.WriteString(c.trace, b.String())
}

// ShellQuote returns s unchanged when it holds only characters no POSIX shell treats specially,
// and single-quoted otherwise. It exists for trace output and messages that a user may copy.
func ShellQuote(s string) string {
	if s == "" {
		return "''"
	}
	if strings.IndexFunc(s, needsQuote) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func needsQuote(r rune) bool {
	switch {
	case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
		return false
	case strings.ContainsRune("@%+=:,./_-", r):
		return false
	}
	return true
}

// Runtime is one OCI runtime registered with the daemon, as `docker info` shows it: the binary
// (a name looked up in the daemon's PATH, or a path) and the arguments the daemon passes it
// before its own.
type Runtime struct {
	Path string   `json:"path"`
	Args []string `json:"runtimeArgs"`
}

// Runtimes returns the runtimes registered with the daemon, by name (`docker info`'s Runtimes).
// It fails with [ErrDaemonUnreachable] when no daemon answers.
func (c *Client) Runtimes(ctx context.Context) (map[string]Runtime, error) {
	rts := map[string]Runtime{}
	if err := c.inspectJSON(ctx, &rts, "info", "--format", "{{json .Runtimes}}"); err != nil {
		return nil, err
	}
	return rts, nil
}

// OperatingSystem is what the daemon says it runs on (`docker info`): "Docker Desktop" on
// Docker Desktop, the distribution's name on Docker Engine.
func (c *Client) OperatingSystem(ctx context.Context) (string, error) {
	out, err := c.output(ctx, "info", "--format", "{{.OperatingSystem}}")
	return strings.TrimSpace(string(out)), err
}

// MCPOAuth runs Docker Desktop's `docker mcp oauth`: ls, or authorize provider when it is not
// "". It talks to the user (a browser opens), so it streams to out and errw, on a terminal
// when tty is set.
func (c *Client) MCPOAuth(ctx context.Context, provider string, tty bool, out, errw io.Writer) error {
	argv := []string{"mcp", "oauth", "ls"}
	if provider != "" {
		argv = []string{"mcp", "oauth", "authorize", provider}
	}
	_, err := c.Run(ctx, Invocation{Args: argv, TTY: tty, Stdout: out, Stderr: errw, StreamOnly: true})
	return err
}
