//go:build e2e

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/pflag"
)

// serverOptions are the flags of `mcpstub server`.
type serverOptions struct {
	// chatty behaves as the official server-everything does with the real gateway: see
	// [chattyTransport] and [runServer].
	chatty bool
	// listDelay holds every tools/list answer back: a slow server, so that a test can have a
	// DELETE arrive while the gateway refreshes its capabilities.
	listDelay time.Duration
}

func parseServerFlags(args []string, stderr io.Writer) (serverOptions, error) {
	var o serverOptions
	fs := pflag.NewFlagSet("server", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.BoolVar(&o.chatty, "chatty", false, "behave as server-everything: list_changed and roots/list after initialize, stdin EOF ignored")
	fs.DurationVar(&o.listDelay, "list-delay", 0, "answer tools/list only after this long")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return o, nil
}

// legacyProtocol is the protocol version clients of `mcpstub server` ask for, the stub
// gateway's among them: the real gateway's go-sdk (v1.4.1) knows only the initialize
// handshake, and the stub's, left to itself, would speak the stateless 2026-07-28 protocol,
// which sends neither initialized nor the notifications that follow it.
const legacyProtocol = "2025-11-25"

// serverTitlePrefix starts the serverInfo title of `mcpstub server`, followed by its hostname:
// in a container, docker's short id of it, which the stub gateway logs for each container.
const serverTitlePrefix = "mcpstub@"

// newStdioServer is the MCP server of `mcpstub server`: echo, and env, which returns one of its
// environment variables so a test can see which secrets a spawned server received. The chatty
// server also asks a client that declares roots for them once it is initialized, as
// server-everything does, and logs the answer on stderr.
func newStdioServer(o serverOptions, stderr io.Writer) *mcp.Server {
	host, _ := os.Hostname()
	var opts mcp.ServerOptions
	if o.chatty {
		opts.InitializedHandler = func(_ context.Context, req *mcp.InitializedRequest) {
			if p := req.Session.InitializeParams(); p == nil || p.Capabilities == nil || p.Capabilities.RootsV2 == nil {
				return
			}
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				res, err := req.Session.ListRoots(ctx, nil)
				if err != nil {
					fmt.Fprintln(stderr, "mcpstub server: roots/list:", err)
					return
				}
				fmt.Fprintf(stderr, "mcpstub server: roots/list: %d roots\n", len(res.Roots))
			}()
		}
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "abox e2e stdio server", Title: serverTitlePrefix + host, Version: "1.0.0"}, &opts)
	if o.listDelay > 0 {
		s.AddReceivingMiddleware(delayList(o.listDelay))
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text back"},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return text(in.Text, false), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "env", Description: "Return one environment variable"},
		func(_ context.Context, _ *mcp.CallToolRequest, in secretIn) (*mcp.CallToolResult, any, error) {
			v, ok := os.LookupEnv(in.Name)
			if !ok {
				return text("not set: "+in.Name, true), nil, nil
			}
			return text(v, false), nil, nil
		})
	return s
}

// delayList holds tools/list back by d, or until the request is cancelled.
func delayList(d time.Duration) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				select {
				case <-time.After(d):
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return next(ctx, method, req)
		}
	}
}

func text(s string, isErr bool) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: isErr, Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// runServer serves MCP over stdin and stdout until the client goes away: stdin's end, or ctx.
//
// The chatty server models server-everything (a Node.js program on the TypeScript SDK) as the
// slow calls measured with the real gateway show it: its stdio transport does not end the
// process at stdin EOF, and its timers keep Node running, so it runs on until a signal (here
// ctx: SIGINT or SIGTERM, which docker's --init passes on). Every close by the gateway's go-sdk
// client then costs the full wait of its CommandTransport: stdin closed, 5 s, SIGTERM to the
// docker CLI, which docker run passes to the container. Without long-lived that is one wait per
// call and one per capability refresh (four list_changed per container: about 30 s a call);
// with long-lived, one wait when the session's container is released, 5 s after its DELETE.
func runServer(ctx context.Context, o serverOptions, stdin io.Reader, stdout, stderr io.Writer) error {
	var t mcp.Transport = &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}}
	if o.chatty {
		t = chattyTransport{t}
	}
	err := newStdioServer(o, stderr).Run(ctx, t)
	if !o.chatty {
		return err
	}
	if ctx.Err() == nil {
		fmt.Fprintln(stderr, "mcpstub server: stdin closed; running on until a signal, as server-everything does")
		<-ctx.Done()
	}
	return nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// chattyListChanged is how many notifications/tools/list_changed server-everything sends once
// a client has initialized: it registers tools one by one after connecting, and its SDK
// announces each.
const chattyListChanged = 4

// chattyTransport sends the chatty server's list_changed notifications when the client's
// notifications/initialized arrives, before the server handles it (and asks for roots).
type chattyTransport struct{ mcp.Transport }

func (t chattyTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return chattyConn{c}, nil
}

type chattyConn struct{ mcp.Connection }

func (c chattyConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if req, ok := msg.(*jsonrpc.Request); ok && err == nil && req.Method == "notifications/initialized" {
		for range chattyListChanged {
			if err := c.Connection.Write(ctx, &jsonrpc.Request{Method: "notifications/tools/list_changed"}); err != nil {
				return nil, err
			}
		}
	}
	return msg, err
}
