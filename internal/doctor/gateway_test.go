package doctor

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/docker"

	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/render"
)

const (
	pinnedDigest = "sha256:54dd518ee51b5c4641b02ddd4790b88cc0dafa59d76b6d07bc441d896a23bbea"
	otherDigest  = "sha256:" + "9999999999999999999999999999999999999999999999999999999999999999"
	gwImageID    = "sha256:" + "7777777777777777777777777777777777777777777777777777777777777777"
)

// withServers is a project with a custom server, so that it needs the profile's gateway.
func withServers(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t, baseManifest)
	f.writeMCP("catalogs/docker-mcp.yaml", "registry:\n  fetch:\n    image: mcp/fetch@"+pinnedDigest+"\n    tools: [{name: fetch}]\n")
	f.manifest = baseManifest + "servers: [fetch]\n"
	f.writeWS("agentbox.yaml", f.manifest)
	f.render()
	f.approve()
	return f
}

func (f *fixture) writeMCP(name, content string) {
	f.t.Helper()
	old := f.ws
	f.ws = f.mcpHome
	f.writeWS(name, content)
	f.ws = old
}

// gatewayContainer answers the gateway's inspect with a container made by edit.
func (f *fixture) gatewayContainer(edit func(c map[string]any)) *fixture {
	c := map[string]any{
		"Id": "gw0001", "Name": "/abox-gw-default", "Image": gwImageID,
		"Args":       []string{"--transport=streaming", "--port=8811", "--verify-signatures", "--log-calls", "--block-secrets"},
		"State":      map[string]any{"Running": true, "Status": "running"},
		"Config":     map[string]any{"Image": f.cfg.Gateway.Image, "Labels": map[string]string{"abox.role": "gateway"}},
		"HostConfig": map[string]any{},
		"Mounts":     []map[string]any{{"Type": "bind", "Source": "/var/run/docker.sock", "Destination": "/var/run/docker.sock"}},
	}
	if edit != nil {
		edit(c)
	}
	f.fake.On("container inspect --format {{json .}} abox-gw-default", jsonResult(c)).Optional()
	return f
}

// gatewayProbe gives the profile a token and answers the probe from the netd image with a
// gateway that answers with the token and gets auth for requests without it.
func (f *fixture) gatewayProbe(auth string) *fixture {
	dir := f.paths.Gateway("default")
	mkdir(f.t, dir)
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte(gwToken+"\n"), 0o600); err != nil {
		f.t.Fatal(err)
	}
	f.fake.On("run --rm --interactive", docker.Result{Stdout: []byte(`{"ok":true,"server":"gw 1","tools":[],"auth":` + auth + `}`)}).Optional()
	return f
}

const (
	gwToken      = "gateway-token-of-the-doctor-fixture-0123456789"
	authEnforced = `{"no_token":401,"wrong_token":401}`
	authOpen     = `{"no_token":200,"wrong_token":200}`
)

func (f *fixture) gatewayImage(digests ...string) *fixture {
	f.fake.On("image inspect --format {{json .}} "+gwImageID, jsonResult(map[string]any{"Id": gwImageID, "RepoDigests": digests})).Optional()
	return f
}

func TestGatewayHealthy(t *testing.T) {
	f := withServers(t).daemonUp().built().noSandbox().gatewayContainer(nil).gatewayImage("docker/mcp-gateway@" + pinnedDigest).
		gatewayProbe(authEnforced)
	for name, c := range map[string]func() Finding{
		"gateway.image-pinned": func() Finding { return f.run(gatewayImagePinned) },
		"gateway.image-digest": func() Finding { return f.run(gatewayImageDigest) },
		"gateway.running":      func() Finding { return f.run(gatewayRunning) },
		"gateway.no-published": func() Finding { return f.run(gatewayNoPublishedPorts) },
		"gateway.verify":       func() Finding { return f.run(gatewayVerifySignatures) },
	} {
		wantStatus(t, name, c(), OK)
	}
}

func TestGatewayUnpinnedImage(t *testing.T) {
	f := withServers(t).daemonUp().noSandbox().gatewayContainer(nil)
	f.cfg.Gateway.Image = "docker/mcp-gateway:v2"
	got := f.run(gatewayImagePinned)
	wantStatus(t, "gateway.image-pinned", got, Fail)
	if !strings.Contains(got.Hint, "abox gateway update") {
		t.Errorf("hint %q does not name `abox gateway update`", got.Hint)
	}
}

func TestGatewayCreatedFromAnotherReference(t *testing.T) {
	f := withServers(t).daemonUp().noSandbox().gatewayContainer(func(c map[string]any) {
		c["Config"].(map[string]any)["Image"] = "docker/mcp-gateway:v2"
	})
	wantStatus(t, "gateway.image-pinned", f.run(gatewayImagePinned), Fail)
}

func TestGatewayRunsAnotherDigest(t *testing.T) {
	f := withServers(t).daemonUp().noSandbox().gatewayContainer(nil).gatewayImage("docker/mcp-gateway@" + otherDigest)
	got := f.run(gatewayImageDigest)
	wantStatus(t, "gateway.image-digest", got, Fail)
	if !strings.Contains(got.Detail, otherDigest) || !strings.Contains(got.Detail, pinnedDigest) {
		t.Errorf("detail %q does not name both digests", got.Detail)
	}
}

func TestGatewayPublishesAPort(t *testing.T) {
	f := withServers(t).daemonUp().noSandbox().gatewayContainer(func(c map[string]any) {
		c["HostConfig"] = map[string]any{"PortBindings": map[string]any{"8811/tcp": []map[string]string{{"HostIp": "0.0.0.0", "HostPort": "8811"}}}}
	})
	got := f.run(gatewayNoPublishedPorts)
	wantStatus(t, "gateway.no-published-ports", got, Fail)
	if got.Detail != "0.0.0.0:8811->8811/tcp" {
		t.Errorf("detail %q", got.Detail)
	}
}

func TestGatewayWithoutVerificationOrToken(t *testing.T) {
	f := withServers(t).daemonUp().built().noSandbox().gatewayContainer(func(c map[string]any) {
		c["Args"] = []string{"--verify-signatures=false", "--allow-unauthenticated"}
	}).gatewayProbe(authEnforced)
	got := f.run(gatewayVerifySignatures)
	wantStatus(t, "gateway.verify-signatures", got, Fail)
	if !strings.Contains(got.Detail, "--allow-unauthenticated") {
		t.Errorf("detail %q", got.Detail)
	}
}

// TestGatewayTokenProvenByBehaviour: a gateway whose arguments are all in order but that
// answers MCP without its token, or with a wrong one, fails gateway.verify-signatures with the
// `abox gateway update` hint; one whose check cannot be proven fails too. The token never
// reaches a finding.
func TestGatewayTokenProvenByBehaviour(t *testing.T) {
	for _, tc := range []struct {
		name, auth, detail, hint string
	}{
		{"open", authOpen, "does not enforce its token: an initialize without a token got HTTP 200, one with a wrong token HTTP 200", "abox gateway update"},
		{"wrong token accepted", `{"no_token":401,"wrong_token":200}`, "one with a wrong token HTTP 200", "abox gateway update"},
		{"no answer without the token", `{"no_token":0,"wrong_token":0,"error":"reset"}`, "got no answer", "abox gateway update"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := withServers(t).daemonUp().built().noSandbox().gatewayContainer(nil).gatewayProbe(tc.auth)
			got := f.run(gatewayVerifySignatures)
			wantStatus(t, "gateway.verify-signatures", got, Fail)
			if !strings.Contains(got.Detail, tc.detail) || !strings.Contains(got.Hint, tc.hint) {
				t.Errorf("finding %q (hint %q), want %q and %q", got.Detail, got.Hint, tc.detail, tc.hint)
			}
			if strings.Contains(got.Detail+got.Hint, gwToken) {
				t.Error("the token is in the finding")
			}
		})
	}
	t.Run("no token to probe with", func(t *testing.T) {
		f := withServers(t).daemonUp().built().noSandbox().gatewayContainer(nil)
		got := f.run(gatewayVerifySignatures)
		wantStatus(t, "gateway.verify-signatures", got, Fail)
		if !strings.Contains(got.Detail, "the token is not proven") {
			t.Errorf("detail %q", got.Detail)
		}
	})
	t.Run("enforced", func(t *testing.T) {
		f := withServers(t).daemonUp().built().noSandbox().gatewayContainer(nil).gatewayProbe(authEnforced)
		got := f.run(gatewayVerifySignatures)
		wantStatus(t, "gateway.verify-signatures", got, OK)
		if !strings.Contains(got.Detail, "refuses requests without its token (401) and with a wrong one (401)") {
			t.Errorf("detail %q", got.Detail)
		}
		var probed bool
		for _, c := range f.fake.Calls() {
			probed = probed || slices.Contains(c.Args, "mcp-probe") && string(c.Stdin) == gwToken+"\n"
		}
		if !probed {
			t.Error("the gateway was not probed with the token on stdin")
		}
	})
}

func TestGatewayMissingOrStopped(t *testing.T) {
	f := withServers(t).daemonUp().noSandbox().noGateway()
	wantStatus(t, "gateway.running (missing)", f.run(gatewayRunning), Fail)
	f = withServers(t).daemonUp().noSandbox().gatewayContainer(func(c map[string]any) {
		c["State"] = map[string]any{"Running": false, "Status": "exited"}
	})
	wantStatus(t, "gateway.running (exited)", f.run(gatewayRunning), Fail)
	// without servers, no gateway is needed
	wantStatus(t, "gateway.running (no servers)", newFixture(t, baseManifest).healthy().run(gatewayRunning), Skip)
}

func TestServersChecks(t *testing.T) {
	f := withServers(t).healthy()
	wantStatus(t, "servers.declared", f.run(serversDeclared), OK)
	wantStatus(t, "servers.pinned", f.run(serversPinned), OK)
	f.writeMCP("catalogs/docker-mcp.yaml", "registry:\n  fetch:\n    image: mcp/fetch:latest\n")
	wantStatus(t, "servers.pinned (tag)", f.run(serversPinned), Fail)
	f.manifest = baseManifest + "servers: [fetch, nope]\n"
	wantStatus(t, "servers.declared (unknown)", f.run(serversDeclared), Fail)
}

// TestServersNetworkAndRisk: server_network: none must reach the rendered catalog; the risk
// names which servers have network.
func TestServersNetworkAndRisk(t *testing.T) {
	f := withServers(t)
	f.writeMCP("catalogs/docker-mcp.yaml", "registry:\n  fetch:\n    image: mcp/fetch@"+pinnedDigest+"\n  git:\n    image: mcp/git@"+pinnedDigest+"\n")
	f.manifest = baseManifest + "servers: [fetch, git]\nserver_network:\n  git: none\n"
	f.render()
	f.approve()
	f.healthy()
	wantStatus(t, "servers.network", f.run(serversNetwork), OK)
	r := f.env().mcpEgressRisk()
	if !r.Applies || !strings.Contains(r.Detail, "fetch has network") || !strings.Contains(r.Detail, "git run with --network none") {
		t.Errorf("risk = %+v", r)
	}
	// a hand-edited catalog without the isolation
	f.writeArtifact(render.CatalogFile, []byte("registry: {}\n"))
	wantStatus(t, "servers.network (not rendered)", f.run(serversNetwork), Fail)
}

// TestTokenNeverReachesTheAgent: an artifact the agent reads that holds the profile's token
// fails agent.mcp-forwarder and agent.env-secrets.
func TestTokenNeverReachesTheAgent(t *testing.T) {
	f := withServers(t).healthy()
	token := "tok-" + strings.Repeat("x", 40)
	mkdir(t, f.paths.Gateway("default"))
	if err := writeFile(f.paths.Gateway("default")+"/token", token+"\n"); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "agent.mcp-forwarder (clean)", f.run(agentMCPForwarder), OK)
	f.writeArtifact("agent/settings.json", []byte(`{"env":{"X":"`+token+`"}}`))
	got := f.run(agentMCPForwarder)
	wantStatus(t, "agent.mcp-forwarder", got, Fail)
	if strings.Contains(got.Detail, token) {
		t.Fatal("the finding prints the token")
	}
	wantStatus(t, "agent.env-secrets", f.run(agentEnvSecrets), Fail)
	f.writeArtifact("agent/mcp.json", []byte(`{"mcpServers":{"abox":{"type":"http","url":"http://127.0.0.1:`+itoa(policy.MCPPort)+`/mcp","headers":{"Authorization":"Bearer x"}}}}`))
	got = f.run(agentMCPForwarder)
	if !strings.Contains(got.Detail, "Authorization") {
		t.Errorf("detail %q does not mention the header", got.Detail)
	}
}
