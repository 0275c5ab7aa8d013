// Package catalog loads the MCP servers abox can declare: the Docker MCP Toolkit catalogs on
// this host (~/.docker/mcp/catalogs/*.yaml, the v3 format whose registry: keys are exactly the
// names the gateway's --servers accepts) and custom-servers.yaml.
//
// The gateway itself only logs an unknown server and starts with zero tools, so abox resolves
// every declared name here, before starting anything, and reports what is missing.
package catalog
