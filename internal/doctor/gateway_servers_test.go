package doctor

import (
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/docker"
)

// TestGatewayServersEnded: an MCP server container on the abox network created before every
// running netd has outlived its run, and is named; with a netd running since before it, it may
// be a live run's and passes.
func TestGatewayServersEnded(t *testing.T) {
	f := newFixture(t, baseManifest).daemonUp()
	net := f.cfg.Network
	server := jsonResult(map[string]any{"Id": "s1", "Name": "/sharp_s1", "Created": "2026-12-07T20:00:00.5Z",
		"Config":          map[string]any{"Labels": map[string]string{"docker-mcp": "true", "docker-mcp-name": "everything"}},
		"NetworkSettings": map[string]any{"Networks": map[string]any{net: map[string]any{}}}})
	f.fake.On("ps --no-trunc --format {{json .}} --all --filter label=docker-mcp=true",
		docker.Result{Stdout: []byte(`{"ID":"s1","Names":"sharp_s1","Labels":"docker-mcp=true,docker-mcp-name=everything"}` + "\n")}).Optional()
	f.fake.On("container inspect --format {{json .}} s1", server).Optional()
	f.fake.On("container inspect --format {{json .}} n1", jsonResult(map[string]any{"Id": "n1", "Name": "/abox-netd-x",
		"Created": "2026-12-07T19:59:59Z", "NetworkSettings": map[string]any{"Networks": map[string]any{net: map[string]any{}}}})).Optional()
	f.fake.On("ps --no-trunc --format {{json .}} --filter label=abox.managed=true --filter label=abox.role=gateway", docker.Result{}).Optional()
	netds := "ps --no-trunc --format {{json .}} --filter label=abox.managed=true --filter label=abox.role=netd"
	f.fake.On(netds, docker.Result{Stdout: []byte(`{"ID":"n1","Names":"abox-netd-x"}` + "\n")}).Once()
	wantStatus(t, "a netd running since before it", f.run(gatewayServersEnded), OK)

	f.fake.On(netds, docker.Result{})
	got := f.run(gatewayServersEnded)
	wantStatus(t, "no netd running", got, Fail)
	if !strings.Contains(got.Detail, "sharp_s1 (server everything") || !strings.Contains(got.Hint, "abox gateway up") {
		t.Errorf("no netd running: %q (hint %q), want the container named and the fix", got.Detail, got.Hint)
	}
}
