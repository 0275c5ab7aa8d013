//go:build e2e

package main

import (
	"context"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// recordingClient connects a client to a server built with o, and records the methods the
// server sends it in order.
func recordingClient(t *testing.T, o serverOptions) (*mcp.ClientSession, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var got []string
	ct, st := mcp.NewInMemoryTransports()
	var tr mcp.Transport = st
	if o.chatty {
		tr = chattyTransport{st}
	}
	ctx := context.Background()
	if _, err := newStdioServer(o, io.Discard).Connect(ctx, tr, nil); err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	c.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			mu.Lock()
			got = append(got, method)
			mu.Unlock()
			return next(ctx, method, req)
		}
	})
	cs, err := c.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: legacyProtocol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}

// TestChattyServer: once initialized, the chatty server sends four tools/list_changed and asks
// for the roots; the plain server sends nothing.
func TestChattyServer(t *testing.T) {
	_, got := recordingClient(t, serverOptions{chatty: true})
	want := []string{"notifications/tools/list_changed", "notifications/tools/list_changed",
		"notifications/tools/list_changed", "notifications/tools/list_changed", "roots/list"}
	waitFor(t, "the chatty server's messages", func() bool { return len(got()) >= len(want) })
	time.Sleep(50 * time.Millisecond)
	if diff := cmp.Diff(want, got()); diff != "" {
		t.Errorf("methods received (-want +got):\n%s", diff)
	}

	cs, got := recordingClient(t, serverOptions{listDelay: 200 * time.Millisecond})
	begin := time.Now()
	if _, err := cs.ListTools(context.Background(), nil); err != nil || time.Since(begin) < 200*time.Millisecond {
		t.Errorf("tools/list with --list-delay=200ms took %v (%v)", time.Since(begin), err)
	}
	if len(got()) != 0 {
		t.Errorf("the plain server sent %v", got())
	}
}

// TestChattyServerOutlivesStdin: at stdin EOF the plain server ends; the chatty one runs on
// until its context ends (a signal).
func TestChattyServerOutlivesStdin(t *testing.T) {
	for _, args := range [][]string{{"server"}, {"server", "--chatty"}} {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan int)
		go func() { done <- run(ctx, args, strings.NewReader(""), io.Discard, io.Discard) }()
		chatty := len(args) > 1
		select {
		case <-done:
			if chatty {
				t.Errorf("%v ended at stdin EOF", args)
			}
		case <-time.After(300 * time.Millisecond):
			if !chatty {
				t.Errorf("%v still runs 300 ms after stdin EOF", args)
			}
			cancel()
			if code := <-done; code != 0 {
				t.Errorf("%v exited %d on its signal, want 0", args, code)
			}
		}
		cancel()
	}
}
