//go:build e2e

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.yaml.in/yaml/v3"
)

// fakeSpawner serves each spawned server in process, over in-memory transports, and counts
// the servers running.
type fakeSpawner struct {
	opts serverOptions
	live atomic.Int32
}

func (f *fakeSpawner) spawn(ctx context.Context, s spawnedServer) (mcp.Transport, []string, error) {
	ct, st := mcp.NewInMemoryTransports()
	var t mcp.Transport = st
	if f.opts.chatty {
		t = chattyTransport{st}
	}
	f.live.Add(1)
	go func() {
		defer f.live.Add(-1)
		_ = newStdioServer(f.opts, io.Discard).Run(context.Background(), t)
	}()
	return ct, []string{"fake", s.name}, nil
}

// startSpawningGateway runs a stub gateway whose catalog holds the server "chatty" (image
// "chatty-image", plus catalogExtra), spawned by sp, and lists it as the gateway does at
// start-up.
func startSpawningGateway(t *testing.T, sp spawner, catalogExtra string, args ...string) (*gateway, string, *syncBuffer) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("MCP_GATEWAY_AUTH_TOKEN", "tok")
	cats := filepath.Join(home, ".docker", "mcp", "catalogs")
	if err := os.MkdirAll(cats, 0o755); err != nil {
		t.Fatal(err)
	}
	cat := "registry:\n  chatty:\n    image: chatty-image\n    command: [server, --chatty]\n" + catalogExtra
	if err := os.WriteFile(filepath.Join(cats, "abox.yaml"), []byte(cat), 0o644); err != nil {
		t.Fatal(err)
	}
	args = append([]string{"--transport=streaming", "--catalog=abox.yaml", "--servers=chatty"}, args...)
	f, err := parseGatewayFlags(args, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	g, err := newGateway(f, slog.New(slog.NewJSONHandler(&logs, nil)), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	g.pool.spawner = sp
	g.listSpawned(context.Background())
	srv := httptest.NewServer(g.handler())
	t.Cleanup(srv.Close)
	return g, srv.URL, &logs
}

// logEvents returns the log lines named msg.
func logEvents(t *testing.T, logs *syncBuffer, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if ev["msg"] == msg {
			out = append(out, ev)
		}
	}
	return out
}

// containers counts the container events of the log as "<event> <why>".
func containers(t *testing.T, logs *syncBuffer) map[string]int {
	t.Helper()
	n := map[string]int{}
	for _, ev := range logEvents(t, logs, "container") {
		n[fmt.Sprint(ev["event"], " ", ev["why"])]++
	}
	return n
}

// TestPoolPerCall: without long-lived, each call starts a container and closes it after the
// call, and each of its four list_changed refreshes the capabilities through a container of
// its own; the refresh containers' own notifications find a refresh running and are skipped.
func TestPoolPerCall(t *testing.T) {
	sp := &fakeSpawner{opts: serverOptions{chatty: true}}
	g, url, logs := startSpawningGateway(t, sp, "")
	cs, err := connect(t, url, "tok")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := toolNames(t, cs), []string{"echo", "env"}; !slices.Equal(got, want) {
		t.Errorf("tools = %v, want the spawned server's %v", got, want)
	}
	const calls = 3
	for i := range calls {
		if got, _ := callText(t, cs, "echo", map[string]any{"text": fmt.Sprint("hi ", i)}); got != fmt.Sprint("hi ", i) {
			t.Errorf("echo = %q", got)
		}
	}
	want := map[string]int{"start list": 1, "close after list": 1, "start call": calls, "close after call": calls,
		"start refresh": 4 * calls, "close after refresh": 4 * calls}
	if diff := cmp.Diff(want, containers(t, logs)); diff != "" {
		t.Errorf("containers (-want +got):\n%s", diff)
	}
	var done, skipped int
	for _, ev := range logEvents(t, logs, "refresh") {
		if ev["skipped"] != nil {
			skipped++
		} else if ev["tools"] == 2.0 {
			done++
		}
	}
	if done != 4*calls || skipped != 4*4*calls {
		t.Errorf("%d refreshes done and %d skipped, want %d and %d", done, skipped, 4*calls, 4*4*calls)
	}
	if calls := logEvents(t, logs, "call"); len(calls) != 3 || calls[0]["ms"] == nil || calls[0]["server"] != "chatty" {
		t.Errorf("call log = %v, want 3 calls of chatty with their ms", calls)
	}
	if n := sp.live.Load(); n != 0 {
		t.Errorf("%d servers still running after the calls", n)
	}
	g.pool.closeAll()
}

// TestPoolLongLived: with --long-lived or the catalog's longLived, a session's calls and
// refreshes share one kept container, released when that session is DELETEd; another
// session's is closed at gateway stop.
func TestPoolLongLived(t *testing.T) {
	for _, tc := range []struct {
		name, catalog string
		args          []string
	}{
		{"flag", "", []string{"--long-lived"}},
		{"catalog", "    longLived: true\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp := &fakeSpawner{opts: serverOptions{chatty: true}}
			g, url, logs := startSpawningGateway(t, sp, tc.catalog, tc.args...)
			a, err := connect(t, url, "tok")
			if err != nil {
				t.Fatal(err)
			}
			b, err := connect(t, url, "tok")
			if err != nil {
				t.Fatal(err)
			}
			for range 3 {
				callText(t, a, "echo", map[string]any{"text": "a"})
			}
			callText(t, b, "echo", map[string]any{"text": "b"})
			waitFor(t, "8 refreshes", func() bool { return len(logEvents(t, logs, "refresh")) >= 8 })
			if diff := cmp.Diff(map[string]int{"start list": 1, "close after list": 1, "start call": 2}, containers(t, logs)); diff != "" {
				t.Errorf("containers before the DELETE (-want +got):\n%s", diff)
			}
			for _, ev := range logEvents(t, logs, "refresh") {
				if ev["skipped"] != nil || (ev["session"] == a.ID()) != (ev["client"] == "c2") {
					t.Errorf("refresh %v: want each through its session's kept client", ev)
				}
			}
			a.Close() // the go-sdk client DELETEs its session
			waitFor(t, "the release of a's container", func() bool { return containers(t, logs)["close session closed"] == 1 })
			g.pool.closeAll()
			if diff := cmp.Diff(map[string]int{"start list": 1, "close after list": 1, "start call": 2,
				"close session closed": 1, "close gateway stop": 1}, containers(t, logs)); diff != "" {
				t.Errorf("containers (-want +got):\n%s", diff)
			}
			for _, ev := range logEvents(t, logs, "container") {
				if ev["why"] == "session closed" && ev["session"] != a.ID() {
					t.Errorf("released %v, want only session a's (%s)", ev, a.ID())
				}
			}
			waitFor(t, "every server to end", func() bool { return sp.live.Load() == 0 })
		})
	}
}

// TestPoolReleaseDeadlock: a DELETE that arrives while a refresh lists through the session's
// kept client releases it once the refreshes queued are done (those after the release are
// skipped); with MCPSTUB_RELEASE_DEADLOCK=1 it never does, and only the gateway's stop closes it.
func TestPoolReleaseDeadlock(t *testing.T) {
	for _, deadlock := range []bool{false, true} {
		t.Run(fmt.Sprint("deadlock=", deadlock), func(t *testing.T) {
			if deadlock {
				t.Setenv(ReleaseDeadlockEnv, "1")
			}
			sp := &fakeSpawner{opts: serverOptions{chatty: true, listDelay: 500 * time.Millisecond}}
			g, url, logs := startSpawningGateway(t, sp, "", "--long-lived")
			cs, err := connect(t, url, "tok")
			if err != nil {
				t.Fatal(err)
			}
			callText(t, cs, "echo", map[string]any{"text": "x"})
			cs.Close() // within the first refresh's 500 ms
			if deadlock {
				waitFor(t, "the stuck release", func() bool { return len(logEvents(t, logs, "release")) == 1 })
				time.Sleep(time.Second) // the refreshes end, and the client stays
				if n := containers(t, logs)["close session closed"]; n != 0 || sp.live.Load() != 1 {
					t.Fatalf("closed %d, %d servers live; want the session's left running", n, sp.live.Load())
				}
			} else {
				waitFor(t, "the release", func() bool { return containers(t, logs)["close session closed"] == 1 })
			}
			g.pool.closeAll()
			if n := containers(t, logs)["close gateway stop"]; n != map[bool]int{false: 0, true: 1}[deadlock] {
				t.Errorf("closed %d at gateway stop", n)
			}
			var skipped int
			for _, ev := range logEvents(t, logs, "refresh") {
				if ev["skipped"] == "the session was released" {
					skipped++
				}
			}
			if skipped != 3 {
				t.Errorf("%d refreshes skipped after the release, want the 3 queued behind the first", skipped)
			}
			waitFor(t, "every server to end", func() bool { return sp.live.Load() == 0 })
		})
	}
}

func TestRunArgs(t *testing.T) {
	var spec catalogServer
	const catalogYAML = `
image: img:1
command: [server, "--greeting={{chatty.greeting}}", "$TOKEN"]
user: "1000"
extraHosts: [h.test:10.0.0.1, --privileged]
secrets: [{name: chatty.token, env: TOKEN}, {name: chatty.missing, env: MISSING}]
env: [{name: PLAIN, value: plain}, {name: TEMPLATED, value: "{{chatty.x}}"}, {name: FROM_SECRET, value: "t=$TOKEN"}]
`
	if err := yaml.Unmarshal([]byte(catalogYAML), &spec); err != nil {
		t.Fatal(err)
	}
	d := dockerSpawner{networks: []string{"net-a", "net-b"}, cpus: 1, memory: "2Gb",
		secrets: map[string]string{"chatty.token": "s3cr3t"}}
	args, env := d.runArgs(spawnedServer{name: "chatty", spec: spec})
	wantArgs := []string{"run", "--rm", "-i", "--init", "--security-opt", "no-new-privileges", "--cpus", "1",
		"--memory", "2Gb", "--pull", "never", "-l", "docker-mcp=true", "-l", "docker-mcp-tool-type=mcp",
		"-l", "docker-mcp-name=chatty", "-l", "docker-mcp-transport=stdio", "--network", "net-a", "--network", "net-b",
		"-e", "TOKEN", "-e", "MISSING", "-e", "PLAIN", "-e", "FROM_SECRET", "-u", "1000", "--add-host", "h.test:10.0.0.1",
		"img:1", "server", "--greeting=", "s3cr3t"}
	if diff := cmp.Diff(wantArgs, args); diff != "" {
		t.Errorf("argv (-want +got):\n%s", diff)
	}
	wantEnv := []string{"TOKEN=s3cr3t", "MISSING=<UNKNOWN>", "PLAIN=plain", "FROM_SECRET=t=s3cr3t"}
	if diff := cmp.Diff(wantEnv, env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	if slices.Contains(args[:len(args)-1], "s3cr3t") {
		t.Error("a secret value is in the argv before the command")
	}

	spec.DisableNetwork = true
	d.dind = true
	args, _ = d.runArgs(spawnedServer{name: "chatty", spec: spec})
	if s := strings.Join(args, " "); !strings.Contains(s, "--pull never --privileged -l") ||
		!strings.Contains(s, "docker-mcp-transport=stdio --network none -e") || strings.Contains(s, "net-a") {
		t.Errorf("argv with disableNetwork and DOCKER_MCP_IN_DIND = %q", s)
	}
}

func TestParseNetworks(t *testing.T) {
	got, err := parseNetworks([]byte(`{"zeta":{"IPAddress":"10.0.0.2"},"abox-e2e-1":{}}` + "\n"))
	if err != nil || !slices.Equal(got, []string{"abox-e2e-1", "zeta"}) {
		t.Errorf("parseNetworks = %v, %v", got, err)
	}
	if _, err := parseNetworks([]byte("no")); err == nil {
		t.Error("parseNetworks accepted garbage")
	}
}

func TestLongLivedFlag(t *testing.T) {
	for args, want := range map[string]bool{"": false, "--long-lived": true, "--long-lived=false": false} {
		f, err := parseGatewayFlags(strings.Fields("--transport=streaming "+args), io.Discard)
		if err != nil || f.longLived != want {
			t.Errorf("parseGatewayFlags(%q).longLived = %v, %v; want %v", args, f.longLived, err, want)
		}
	}
}

// TestSpawnedToolsNarrowed: --tools narrows a spawned server's tools as a built-in one's.
func TestSpawnedToolsNarrowed(t *testing.T) {
	_, url, _ := startSpawningGateway(t, &fakeSpawner{}, "", "--tools=chatty:env")
	cs, err := connect(t, url, "tok")
	if err != nil {
		t.Fatal(err)
	}
	if got := toolNames(t, cs); !slices.Equal(got, []string{"env"}) {
		t.Errorf("tools = %v, want [env]", got)
	}
}
