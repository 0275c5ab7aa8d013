package toolcost

import (
	"encoding/json"
	"fmt"

	"github.com/aboxhq/abox/internal/policy"
)

// Project is what pricing a project's tools reads of its manifest and configuration.
type Project struct {
	Name       string              // the manifest's project
	Narrowed   map[string][]string // the manifest's tools: narrowing
	Version    string              // config.yaml's claude_code.version
	AgentEnv   map[string]string   // config.yaml's agent_env
	EnvSecrets map[string]string   // the manifest's env_secrets: set from secrets, never read here
}

// NoServersError is a project whose netd forwards no MCP server: there is nothing to price.
type NoServersError struct{ Project string }

func (e *NoServersError) Error() string { return fmt.Sprintf("%s declares no MCP server", e.Project) }

// Estimate is `abox mcp cost` of project p, whose netd forwards as mcp says (nil: no server, a
// [*NoServersError] before anything is asked): it keeps the tools list returns as netd would
// ([Of]), prices them for p's Claude Code ([Report.Price]) and notes the switches env_secrets
// sets unread ([UnreadSwitches]). list asks the running gateway for its tools; its error is
// returned as it is.
func Estimate(mcp *policy.MCP, p Project, list func() ([]json.RawMessage, error)) (Report, error) {
	if mcp == nil {
		return Report{}, &NoServersError{Project: p.Name}
	}
	tools, err := list()
	if err != nil {
		return Report{}, err
	}
	rep := Of(tools, mcp, p.Narrowed)
	rep.Price(p.Version, p.AgentEnv)
	rep.Client.Why += UnreadSwitches(p.EnvSecrets)
	return rep, nil
}
