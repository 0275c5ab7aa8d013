package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Container is the part of `docker container inspect` that abox reads: enough for doctor to audit
// a live container against its runspec, and for the sandbox to follow its state.
type Container struct {
	ID              string `json:"Id"`
	Name            string // with the daemon's leading "/"
	Created         string // when it was created, RFC 3339 with nanoseconds
	Image           string // the image ID ("sha256:…"); Config.Image is the reference used
	Args            []string
	State           ContainerState
	Config          ContainerConfig
	HostConfig      HostConfig
	Mounts          []MountPoint
	NetworkSettings NetworkSettings
}

// ContainerState is [Container].State.
type ContainerState struct {
	Status   string // "created", "running", "exited", …
	Running  bool
	ExitCode int
	Pid      int
	// StartedAt is when the container's current start began (RFC 3339); a restart changes it.
	StartedAt string
}

// ContainerConfig is [Container].Config: what the container was created with.
type ContainerConfig struct {
	Image      string
	User       string
	Env        []string
	Cmd        []string
	Entrypoint []string
	Labels     map[string]string
}

// HostConfig is [Container].HostConfig: the isolation settings doctor audits. The daemon
// normalises capabilities: `--cap-add NET_ADMIN` reads back as "CAP_NET_ADMIN", "ALL" stays.
type HostConfig struct {
	CapAdd         []string
	CapDrop        []string
	SecurityOpt    []string
	Privileged     bool
	NetworkMode    string // "default", "container:<id>", a network name, …
	Runtime        string // the OCI runtime: runc unless --runtime chose another
	PortBindings   map[string][]PortBinding
	Binds          []string // -v arguments as given
	Mounts         []Mount  // --mount arguments
	ReadonlyRootfs bool
	PidsLimit      *int64 // nil when unlimited
	Memory         int64  // bytes; 0 when unlimited
	Sysctls        map[string]string
}

// PortBinding is one published port.
type PortBinding struct {
	HostIP   string `json:"HostIp"`
	HostPort string
}

// Mount is one --mount argument as the daemon recorded it.
type Mount struct {
	Type     string // "bind", "volume", "tmpfs"
	Source   string
	Target   string
	ReadOnly bool
}

// MountPoint is one mount of a created container, whatever flag made it.
type MountPoint struct {
	Type        string
	Name        string // volume name
	Source      string
	Destination string
	Mode        string
	RW          bool
}

// NetworkSettings is [Container].NetworkSettings.
type NetworkSettings struct {
	// Networks is keyed by network name.
	Networks map[string]struct {
		NetworkID string
		IPAddress string
		Aliases   []string
	}
	// Ports maps "80/tcp" to its host bindings; a nil slice means exposed but not published.
	Ports map[string][]PortBinding
}

// ContainerInspect returns the named container, or an error matching [ErrNotFound].
func (c *Client) ContainerInspect(ctx context.Context, name string) (*Container, error) {
	var ct Container
	if err := c.inspectJSON(ctx, &ct, "container", "inspect", "--format", "{{json .}}", name); err != nil {
		return nil, err
	}
	return &ct, nil
}

// Create runs argv, the full literal `create …` argv of a runspec, and returns the new
// container's ID. The argv is run exactly as given: it is the audited artifact. Like
// [Client.RunDetached], it runs to its end once started.
func (c *Client) Create(ctx context.Context, argv []string) (string, error) {
	return c.CreateWithInput(ctx, argv, nil)
}

// CreateWithInput is [Client.Create] with stdin as the CLI's standard input, for an argv that
// reads a file from it (--env-file /dev/stdin).
func (c *Client) CreateWithInput(ctx context.Context, argv []string, stdin io.Reader) (string, error) {
	if len(argv) == 0 || argv[0] != "create" {
		return "", fmt.Errorf("docker create: argv must start with \"create\", got %q", argv)
	}
	ctx, cancel, err := uncancelled(ctx)
	if err != nil {
		return "", err
	}
	defer cancel()
	res, err := c.Run(ctx, Invocation{Args: argv, Stdin: stdin})
	if err != nil {
		return "", err
	}
	return idFrom(argv, res.Stdout)
}

// RunDetached runs argv, a full literal `run …` argv, with "--detach" added right after "run"
// unless it is already there, and returns the new container's ID.
//
// Once started, it runs to its end even if ctx is cancelled: killing the docker CLI mid-call
// does not stop the daemon from making the container, and a caller told "cancelled" would not
// know it has a container to remove. The caller checks ctx afterwards.
func (c *Client) RunDetached(ctx context.Context, argv []string) (string, error) {
	if len(argv) == 0 || argv[0] != "run" {
		return "", fmt.Errorf("docker run: argv must start with \"run\", got %q", argv)
	}
	args := argv
	if len(argv) < 2 || (argv[1] != "--detach" && argv[1] != "-d") {
		args = append([]string{"run", "--detach"}, argv[1:]...)
	}
	ctx, cancel, err := uncancelled(ctx)
	if err != nil {
		return "", err
	}
	defer cancel()
	out, err := c.output(ctx, args...)
	if err != nil {
		return "", err
	}
	return idFrom(args, out)
}

// creationTimeout bounds a call that creates a container once it no longer follows its
// caller's context.
const creationTimeout = 2 * time.Minute

// uncancelled returns a context for a call that creates something on the daemon: ctx's values
// without its cancellation, bounded by [creationTimeout]. It refuses to start once ctx has ended.
func uncancelled(ctx context.Context) (context.Context, context.CancelFunc, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), creationTimeout)
	return ctx, cancel, nil
}

// Start starts created or stopped containers.
func (c *Client) Start(ctx context.Context, names ...string) error {
	return c.run(ctx, append([]string{"start"}, names...)...)
}

// Stop stops a container: SIGTERM (or its stop signal), then SIGKILL after timeout, which is
// rounded up to whole seconds. The short flag -t works with both CLI 20.10 (--time) and 28
// (--timeout).
func (c *Client) Stop(ctx context.Context, name string, timeout time.Duration) error {
	secs := int((timeout + time.Second - 1) / time.Second)
	return c.run(ctx, "stop", "-t", strconv.Itoa(secs), name)
}

// Kill sends signal ("TERM", "HUP", "SIGUSR1", …) to a running container's main process.
func (c *Client) Kill(ctx context.Context, name, signal string) error {
	return c.run(ctx, "kill", "--signal", signal, name)
}

// Remove removes containers, stopping them first when force is set and removing their anonymous
// volumes when volumes is set. A container that does not exist is not an error, and neither is
// one another process is removing at the same moment: Remove waits, within ctx, until it is
// gone.
func (c *Client) Remove(ctx context.Context, force, volumes bool, names ...string) error {
	if len(names) == 0 {
		return nil
	}
	err := ignoreNotFound(c.run(ctx, removeArgs(force, volumes, names)...))
	var ee *ExitError
	if !errors.As(err, &ee) {
		return err
	}
	pending, others := removalsInProgress(ee.Stderr)
	if len(pending) == 0 || others {
		return err
	}
	return c.waitGone(ctx, pending)
}

// waitGone waits until none of the containers exists any more.
func (c *Client) waitGone(ctx context.Context, names []string) error {
	for _, name := range names {
		for {
			_, err := c.ContainerInspect(ctx, name)
			if errors.Is(err, ErrNotFound) {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("container %s, which another process was removing, is still there: %w", name, ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

func removeArgs(force, volumes bool, names []string) []string {
	args := []string{"rm"}
	if force {
		args = append(args, "--force")
	}
	if volumes {
		args = append(args, "--volumes")
	}
	return append(args, names...)
}

// Exec runs argv in the running container name as user ("" for the image's user), with stdin
// attached when it is not nil. The command's own non-zero exit is an [*ExitError] carrying its
// code; the [Result] holds its output either way.
func (c *Client) Exec(ctx context.Context, name, user string, argv []string, stdin io.Reader) (Result, error) {
	return c.Run(ctx, Invocation{Args: execArgs(name, user, argv, stdin != nil), Stdin: stdin})
}

func execArgs(name, user string, argv []string, interactive bool) []string {
	args := []string{"exec"}
	if interactive {
		args = append(args, "--interactive")
	}
	if user != "" {
		args = append(args, "--user", user)
	}
	args = append(args, name)
	return append(args, argv...)
}

// Logs writes the container's output so far (stdout and stderr, interleaved) to w.
func (c *Client) Logs(ctx context.Context, name string, w io.Writer) error {
	return c.logs(ctx, w, "logs", name)
}

// FollowLogs writes the container's output to w as it is produced, until the container exits
// or ctx ends. The end of ctx is not an error.
func (c *Client) FollowLogs(ctx context.Context, name string, w io.Writer) error {
	err := c.logs(ctx, w, "logs", "--follow", name)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

func (c *Client) logs(ctx context.Context, w io.Writer, args ...string) error {
	_, err := c.Run(ctx, Invocation{Args: args, Stdout: w, Stderr: w, StreamOnly: true})
	return err
}

// ContainerSummary is one line of `docker ps`.
type ContainerSummary struct {
	ID     string
	Names  []string
	Image  string
	Labels map[string]string
	State  string // "running", "exited", "created", …
	Status string // "Up 5 minutes", "Exited (0) 2 hours ago"
}

// ContainersByLabel lists the containers that carry every label in labels (an empty value
// matches any value), running ones only unless all is set.
func (c *Client) ContainersByLabel(ctx context.Context, labels map[string]string, all bool) ([]ContainerSummary, error) {
	out, err := c.output(ctx, psArgs(labels, all)...)
	if err != nil {
		return nil, err
	}
	return parsePS(out)
}

func psArgs(labels map[string]string, all bool) []string {
	args := []string{"ps", "--no-trunc", "--format", "{{json .}}"}
	if all {
		args = append(args, "--all")
	}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		f := "label=" + k
		if labels[k] != "" {
			f += "=" + labels[k]
		}
		args = append(args, "--filter", f)
	}
	return args
}

// psLine is one `ps --format '{{json .}}'` line; the CLI prints Names and Labels as
// comma-joined strings.
type psLine struct {
	ID, Names, Image, Labels, State, Status string
}

func parsePS(out []byte) ([]ContainerSummary, error) {
	var list []ContainerSummary
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		var p psLine
		if err := json.Unmarshal([]byte(line), &p); err != nil {
			return nil, fmt.Errorf("docker ps: decoding %q: %w", line, err)
		}
		list = append(list, ContainerSummary{
			ID: p.ID, Names: splitNonEmpty(p.Names), Image: p.Image,
			Labels: parseLabels(p.Labels), State: p.State, Status: p.Status,
		})
	}
	return list, nil
}

// parseLabels splits ps's "k1=v1,k2=v2" form. A value may itself hold commas ("a=x,y"): a
// segment without "=" continues the previous value. A value holding ",k=v" cannot be told apart
// from two labels; abox's own labels never contain commas.
func parseLabels(s string) map[string]string {
	labels := map[string]string{}
	last := ""
	for _, seg := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(seg, "=")
		switch {
		case ok:
			labels[k] = v
			last = k
		case last != "":
			labels[last] += "," + seg
		case seg != "":
			labels[seg] = ""
		}
	}
	return labels
}

func splitNonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
