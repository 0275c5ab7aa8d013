//go:build e2e

package main

import (
	"context"
	"io"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// newStdioServer is the MCP server of `mcpstub server`: echo, and env, which returns one of its
// environment variables so a test can see which secrets a spawned server received.
func newStdioServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "abox e2e stdio server", Version: "1.0.0"}, nil)
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

func text(s string, isErr bool) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: isErr, Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// runServer serves MCP over stdin and stdout until the client goes away.
func runServer(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
	t := &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}}
	return newStdioServer().Run(ctx, t)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
