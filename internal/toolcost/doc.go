// Package toolcost estimates what the MCP tools the agent sees cost the model, as `abox mcp
// cost` reports it.
//
// The agent sees the gateway's tools only through netd, so the estimate keeps exactly the tools
// netd lets through and attributes them as netd does ([policy.MCP.Allows]). What a turn carries
// depends on the Claude Code that runs: with tool search it defers the definitions and sends
// only their names, so both figures are kept, and [Report.Price] says which applies and why
// ([claudecode.ToolSearchOf]). It does no I/O: the tools come from the caller's probe, and
// [Report.WriteText] prints the report to the writer it is given, as the command shows it.
package toolcost
