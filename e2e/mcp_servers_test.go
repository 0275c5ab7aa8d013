//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aboxhq/abox/e2e/harness"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tests of this file run the stub gateway that spawns its servers as containers
// (harness.GatewayOptions.Spawn), without abox, against the chatty server (`mcpstub server
// --chatty`, which behaves as server-everything does): they reproduce issue 36's slow calls
// without long-lived, the fast ones with it, the release of a session's container at its
// DELETE, and the real gateway's bug that leaves one behind.

// spawnedServer is the catalog name of the chatty server.
const spawnedServer = "chatty"

// startSpawningGateway starts the spawning stub with a catalog holding the chatty server, run
// with the extra server flags, and the gateway flags args.
func startSpawningGateway(t *testing.T, h *harness.H, serverFlags string, env []string, args ...string) *harness.Gateway {
	t.Helper()
	dir := t.TempDir()
	catalog := fmt.Sprintf("registry:\n  %s:\n    image: %s\n    command: [server, --chatty%s]\n",
		spawnedServer, harness.MCPStubImage(t), serverFlags)
	if err := os.WriteFile(filepath.Join(dir, "servers.yaml"), []byte(catalog), 0o644); err != nil {
		t.Fatal(err)
	}
	return h.StartGateway(harness.GatewayOptions{Spawn: true, Env: env,
		Mounts: []string{filepath.Join(dir, "servers.yaml") + ":/root/.docker/mcp/catalogs/servers.yaml:ro"},
		Args:   append([]string{"--catalog=servers.yaml", "--servers=" + spawnedServer}, args...)})
}

type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// connectGateway opens an MCP session with the gateway from the test, at its address on the
// test network.
func connectGateway(t *testing.T, gw *harness.Gateway) *mcp.ClientSession {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: "http://" + gw.IP + ":8811/mcp", DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: bearerTransport{gw.Token}}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "abox-e2e", Version: "1"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("connecting to the gateway at %s: %v", gw.IP, err)
	}
	return cs
}

// callEcho calls the spawned server's echo and fails the test unless it answers.
func callEcho(t *testing.T, cs *mcp.ClientSession, text string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != text {
		t.Fatalf("echo %q = %v, %v", text, res, err)
	}
}

// callMillis returns the durations the gateway logged for its calls, in order.
func callMillis(h *harness.H, gw *harness.Gateway) []float64 {
	var ms []float64
	for _, ev := range h.Events(gw.Container, "call") {
		v, _ := ev["ms"].(float64)
		ms = append(ms, v)
	}
	return ms
}

// containerEvents counts the gateway's container events as "<event> <why>".
func containerEvents(h *harness.H, gw *harness.Gateway) map[string]int {
	n := map[string]int{}
	for _, ev := range h.Events(gw.Container, "container") {
		n[ev.Str("event")+" "+ev.Str("why")]++
	}
	return n
}

// serverContainers returns the short ids of the chatty server's containers on the test network.
func serverContainers(h *harness.H) []string {
	h.T.Helper()
	out := h.MustDocker("container", "ls", "-q", "--filter", "label=docker-mcp-name="+spawnedServer,
		"--filter", "network="+h.Network)
	return strings.Fields(out)
}

// waitGone waits up to limit for the server's containers to be gone, and returns how long it took.
func waitGone(t *testing.T, h *harness.H, limit time.Duration) time.Duration {
	t.Helper()
	begin := time.Now()
	for len(serverContainers(h)) > 0 {
		if time.Since(begin) > limit {
			t.Fatalf("server containers %v still up %v later", serverContainers(h), limit)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return time.Since(begin)
}

// TestMCPServersPerCall: without --long-lived every call starts a container, and each of the
// chatty server's four list_changed refreshes the capabilities through a container of its own,
// each closed only after 5 s: every call takes seconds (the slow path of issue 36). Nothing is
// left running after the calls.
func TestMCPServersPerCall(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	gw := startSpawningGateway(t, h, "", nil)
	cs := connectGateway(t, gw)
	defer cs.Close()
	const calls = 5
	for i := range calls {
		callEcho(t, cs, fmt.Sprint("slow ", i))
	}
	ms := callMillis(h, gw)
	t.Logf("calls without long-lived (ms, as the gateway logged them): %v", ms)
	if len(ms) != calls {
		t.Fatalf("the gateway logged %d calls, want %d", len(ms), calls)
	}
	for i, m := range ms {
		if m < 5000 { // at least the call's own container waits 5 s for its server to exit
			t.Errorf("call %d took %.1f ms, want the slow path's seconds", i+1, m)
		}
	}
	got := containerEvents(h, gw)
	if got["start call"] != calls || got["start refresh"] != 4*calls || got["close after call"] != calls ||
		got["close after refresh"] != 4*calls {
		t.Errorf("container events %v, want %d per call and %d per refresh, each closed", got, calls, 4*calls)
	}
	waitGone(t, h, 15*time.Second)
}

// TestMCPServersLongLived: with --long-lived the session's first call starts its container and
// the later ones reuse it in milliseconds; the refreshes go through it too. The container is the
// real gateway's (labels, flags, the gateway's network), and it is gone a few seconds after the
// session's DELETE: stdin closed, 5 s, SIGTERM.
func TestMCPServersLongLived(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	gw := startSpawningGateway(t, h, "", nil, "--long-lived")
	cs := connectGateway(t, gw)
	const calls = 5
	for i := range calls {
		callEcho(t, cs, fmt.Sprint("fast ", i))
		if i == 0 {
			waitRefreshes(t, h, gw)
		}
	}
	ms := callMillis(h, gw)
	t.Logf("calls with long-lived (ms, as the gateway logged them): %v", ms)
	if len(ms) != calls {
		t.Fatalf("the gateway logged %d calls, want %d", len(ms), calls)
	}
	for i, m := range ms[1:] {
		if m >= 100 {
			t.Errorf("call %d took %.1f ms, want under 100 ms with the container kept", i+2, m)
		}
	}
	if got := containerEvents(h, gw); got["start call"] != 1 || got["start refresh"] != 0 {
		t.Errorf("container events %v, want one container for the session and no refresh container", got)
	}
	ids := serverContainers(h)
	if len(ids) != 1 {
		t.Fatalf("server containers on the network: %v, want the session's one", ids)
	}
	checkServerContainer(t, h, gw, ids[0])

	if err := cs.Close(); err != nil { // the go-sdk client DELETEs its session
		t.Fatal(err)
	}
	took := waitGone(t, h, 15*time.Second)
	t.Logf("the server container was gone %v after the DELETE", took.Round(10*time.Millisecond))
	if got := containerEvents(h, gw); got["close session closed"] != 1 {
		t.Errorf("container events %v, want the session's container closed at its end", got)
	}
}

// waitRefreshes waits until the four refreshes the session's first call brought have gone
// through the session's kept client, so that the later calls time the reuse alone, on a machine
// that runs other tests.
func waitRefreshes(t *testing.T, h *harness.H, gw *harness.Gateway) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var through []string
		for _, ev := range h.Events(gw.Container, "refresh") {
			through = append(through, ev.Str("client"))
		}
		if slices.Equal(through, []string{"c2", "c2", "c2", "c2"}) { // c1 listed the server at start-up
			return
		}
		if len(through) >= 4 || time.Now().After(deadline) {
			t.Fatalf("refreshes through clients %v, want four through the session's (c2)", through)
		}
	}
}

// checkServerContainer: the gateway logged the container it started, and docker shows it as
// the real gateway's argv makes it.
func checkServerContainer(t *testing.T, h *harness.H, gw *harness.Gateway, id string) {
	t.Helper()
	var logged []string
	for _, ev := range h.Events(gw.Container, "container") {
		if ev.Str("event") == "start" && ev.Str("why") == "call" {
			logged = append(logged, ev.Str("container"))
		}
	}
	if !slices.Equal(logged, []string{id}) {
		t.Errorf("the gateway logged containers %v, docker shows %s", logged, id)
	}
	got := h.MustDocker("container", "inspect", "--format", `{{index .Config.Labels "docker-mcp"}} `+
		`{{index .Config.Labels "docker-mcp-tool-type"}} {{index .Config.Labels "docker-mcp-transport"}} `+
		`{{.HostConfig.Init}} {{.HostConfig.AutoRemove}} {{.HostConfig.SecurityOpt}} {{.HostConfig.NanoCpus}} `+
		`{{.HostConfig.Memory}} {{len .NetworkSettings.Networks}}`, id)
	if want := "true mcp stdio true true [no-new-privileges] 1000000000 2147483648 1"; got != want {
		t.Errorf("server container: %q, want %q", got, want)
	}
}

// TestMCPServersReleaseDeadlock: a DELETE that arrives while a refresh runs (the chatty server
// answers tools/list after 3 s) still releases the session's container once the refresh is
// done; with MCPSTUB_RELEASE_DEADLOCK=1, as with the real gateway, the container stays up until
// the gateway stops. A test of abox's sweep can start from that state.
func TestMCPServersReleaseDeadlock(t *testing.T) {
	t.Parallel()
	for _, deadlock := range []bool{false, true} {
		t.Run(fmt.Sprint("deadlock=", deadlock), func(t *testing.T) {
			t.Parallel()
			h := harness.Setup(t)
			var env []string
			if deadlock {
				env = []string{"MCPSTUB_RELEASE_DEADLOCK=1"}
			}
			gw := startSpawningGateway(t, h, ", --list-delay=3s", env, "--long-lived")
			cs := connectGateway(t, gw)
			callEcho(t, cs, "race")
			if err := cs.Close(); err != nil { // during the first refresh's 3 s
				t.Fatal(err)
			}
			if !deadlock {
				took := waitGone(t, h, 30*time.Second)
				t.Logf("released %v after the DELETE", took.Round(10*time.Millisecond))
				return
			}
			time.Sleep(15 * time.Second) // the refreshes, the 5 s close, and more
			stuck := h.Events(gw.Container, "release")
			if ids := serverContainers(h); len(ids) != 1 || len(stuck) != 1 {
				t.Fatalf("15 s after the DELETE: containers %v, stuck releases %v; want the session's one left", ids, stuck)
			}
			begin := time.Now()
			h.MustDocker("stop", "-t", "30", gw.Container)
			waitGone(t, h, 15*time.Second)
			t.Logf("the stuck container was gone %v after the gateway's stop began", time.Since(begin).Round(10*time.Millisecond))
			if got := containerEvents(h, gw); got["close gateway stop"] != 1 {
				t.Errorf("container events %v, want the stuck one closed at gateway stop", got)
			}
		})
	}
}
