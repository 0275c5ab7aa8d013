package toolcost

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/policy"
)

// TestEstimate: a project whose netd forwards no server is refused before the gateway is
// asked; otherwise the listed tools are kept and priced as Of and Price do, with the unread
// switches noted, and the listing's error returned as it is.
func TestEstimate(t *testing.T) {
	asked := false
	list := func() ([]json.RawMessage, error) {
		asked = true
		return raws(t, `{"name":"a1","inputSchema":{"type":"object"}}`, `{"name":"hidden"}`), nil
	}
	var ns *NoServersError
	if _, err := Estimate(nil, Project{Name: "demo"}, list); !errors.As(err, &ns) || err.Error() != "demo declares no MCP server" || asked {
		t.Fatalf("Estimate(no server) = %v, gateway asked %v; want a NoServersError first", err, asked)
	}

	mcp := &policy.MCP{Tools: map[string]string{"a1": "a"}}
	p := Project{Name: "demo", Narrowed: map[string][]string{"a": {"a1"}}, Version: "2.1.0",
		AgentEnv: map[string]string{}, EnvSecrets: map[string]string{"ENABLE_TOOL_SEARCH": "flag"}}
	rep, err := Estimate(mcp, p, list)
	if err != nil {
		t.Fatal(err)
	}
	want := Of(raws(t, `{"name":"a1","inputSchema":{"type":"object"}}`), mcp, p.Narrowed)
	want.Price(p.Version, p.AgentEnv)
	if diff := cmp.Diff(want.Tools, rep.Tools); diff != "" || rep.PerTurn != want.PerTurn {
		t.Errorf("Estimate tools (-want +got):\n%s; per turn %d, want %d", diff, rep.PerTurn, want.PerTurn)
	}
	if !strings.HasPrefix(rep.Client.Why, want.Client.Why) || !strings.Contains(rep.Client.Why, "env_secrets also sets ENABLE_TOOL_SEARCH") {
		t.Errorf("Why = %q, want %q and the unread switch", rep.Client.Why, want.Client.Why)
	}

	down := errors.New("gateway down")
	if _, err := Estimate(mcp, p, func() ([]json.RawMessage, error) { return nil, down }); err != down {
		t.Errorf("Estimate with a failing listing = %v, want its error", err)
	}
}
