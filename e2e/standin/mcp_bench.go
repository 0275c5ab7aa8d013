//go:build e2e

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpBenchReport is what `claude mcp-call --repeat N list|call …` prints: the session's set-up
// (initialize and its notification) and then N operations in that one session, as Claude Code
// uses a server: connect once, call many times.
type mcpBenchReport struct {
	benchReport
	ConnectUS int64 `json:"connect_us"`
}

// mcpBench runs args (list, or call TOOL [JSON]) n times in one session.
func mcpBench(ctx context.Context, s mcpServer, args []string, n int, stdout, stderr io.Writer) int {
	op, err := mcpBenchOp(args)
	if err != nil {
		fmt.Fprintln(stderr, "mcp-call:", err)
		fmt.Fprintln(stderr, mcpCallUsage)
		return 2
	}
	start := time.Now()
	cs, err := connect(ctx, s)
	if err != nil {
		fmt.Fprintf(stderr, "mcp-call: connecting to %s: %v\n", s.URL, err)
		return 1
	}
	defer release(s, cs)
	rep := mcpBenchReport{ConnectUS: time.Since(start).Microseconds()}
	rep.benchReport = timed(n, 1, func(int) error { return op(ctx, cs) })
	rep.Mode = "mcp-" + args[0]
	printJSON(stdout, rep)
	if !rep.OK {
		return 1
	}
	return 0
}

// mcpBenchOp returns the operation args name: tools/list, or tools/call of one tool whose result
// must not be an error.
func mcpBenchOp(args []string) (func(context.Context, *mcp.ClientSession) error, error) {
	switch {
	case len(args) == 1 && args[0] == "list":
		return func(ctx context.Context, cs *mcp.ClientSession) error {
			_, err := cs.ListTools(ctx, nil)
			return err
		}, nil
	case (len(args) == 2 || len(args) == 3) && args[0] == "call":
		var arguments map[string]any
		if err := json.Unmarshal([]byte(append(args[2:], "{}")[0]), &arguments); err != nil {
			return nil, fmt.Errorf("arguments of %s: %w", args[1], err)
		}
		params := &mcp.CallToolParams{Name: args[1], Arguments: arguments}
		return func(ctx context.Context, cs *mcp.ClientSession) error {
			res, err := cs.CallTool(ctx, params)
			if err == nil && res.IsError {
				err = fmt.Errorf("%s returned an error result", params.Name)
			}
			return err
		}, nil
	}
	return nil, fmt.Errorf("--repeat takes list or call TOOL [JSON]")
}
