package gateway

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/aboxhq/abox/internal/render"
)

// TokenEnv is the variable the gateway reads its bearer token from.
const TokenEnv = "MCP_GATEWAY_AUTH_TOKEN"

// ServerLife is how long the gateway keeps a server's container: for the MCP session it serves
// (--long-lived), which is one run's. Without it the gateway starts a container for every tool
// call, and lists the server's tools again through yet another container each time the server
// says they changed: a call of a server that says so at start took 30 s. A session's state
// (what the server holds in memory) lasts across the calls of one run; no two runs, and so no
// two projects, share a session.
const ServerLife = "session"

// ProbeEntrypoint is the abox binary in the netd image, which runs the health probe.
const ProbeEntrypoint = "/usr/local/bin/abox"

// Name is the container name of a profile's gateway.
func Name(profile string) string { return render.GatewayName(profile) }

// URL is the gateway's MCP endpoint on the abox network: what netd forwards to and the probe
// calls. Nothing is published on the host.
func URL(profile string, port int) string {
	return fmt.Sprintf("http://%s:%d/mcp", Name(profile), port)
}

// Container is the gateway container's definition: everything its `docker run` argv says.
type Container struct {
	Profile     string
	Image       string
	Network     string // exactly one: on two, dockerd < 25 refuses every server the gateway starts
	Port        int
	Servers     []string // --servers, sorted
	Tools       []string // --tools
	CatalogFile string   // host path of the union catalog
	SecretsFile string   // host path of the secrets file; "" when there is none
	Fingerprint string   // [Fingerprint.Sum], as a label
}

// RunArgs returns the `docker run` argv, without "docker". envFile is the host path of the
// 0600 file holding MCP_GATEWAY_AUTH_TOKEN: the token itself is never in the argv.
//
// --long-lived keeps a server's container for its MCP session, a run's ([ServerLife]).
//
// File mode (--servers) switches the gateway's dynamic tools off, so an agent cannot enable
// other catalog servers through it. --secrets always names a file and never docker-desktop,
// whose plain-Engine fallback hands servers literal se:// strings.
func (c Container) RunArgs(envFile string) []string {
	a := []string{
		"run", "--detach",
		"--name", Name(c.Profile),
		"--network", c.Network,
		"--restart", "unless-stopped",
		"--pull", "never",
		"--label", "abox.fingerprint=" + c.Fingerprint,
		"--label", "abox.managed=true",
		"--label", "abox.profile=" + c.Profile,
		"--label", "abox.role=gateway",
		"--env-file", envFile,
		"--env", "DOCKER_MCP_IN_CONTAINER=1",
		// The gateway execs `docker run` for each server with only PATH in its environment,
		// so the socket must be at the default path.
		"--volume", dockerSocket + ":" + dockerSocket,
		"--mount", render.Mount{Type: "bind", Source: c.CatalogFile, Target: catalogDir + "/" + CatalogName(c.Profile), ReadOnly: true}.Arg(),
	}
	if c.SecretsFile != "" {
		a = append(a, "--mount", render.Mount{Type: "bind", Source: c.SecretsFile, Target: SecretsPath(c.Profile), ReadOnly: true}.Arg())
	}
	a = append(a, c.Image,
		"--transport=streaming",
		"--port="+strconv.Itoa(c.Port),
		"--catalog="+CatalogName(c.Profile),
		"--servers="+strings.Join(c.Servers, ","),
		"--tools="+strings.Join(c.Tools, ","),
		"--secrets="+SecretsPath(c.Profile),
		"--long-lived",
		"--verify-signatures",
		"--log-calls",
		"--block-secrets",
	)
	return a
}

// ProbeArgs returns the argv of one health probe: `abox mcp-probe` in the netd image, on the
// gateway's network (the gateway publishes nothing), with no capabilities, a read-only root and
// the nobody user. The token goes on its stdin.
func ProbeArgs(profile, network, image string, port int) []string {
	return []string{
		"run", "--rm", "--interactive",
		"--pull", "never",
		"--network", network,
		"--user", "65534:65534",
		"--cap-drop", "ALL",
		"--security-opt", "no-new-privileges",
		"--read-only",
		"--label", "abox.managed=true",
		"--label", "abox.profile=" + profile,
		"--label", "abox.role=probe",
		"--entrypoint", ProbeEntrypoint,
		image,
		"mcp-probe", URL(profile, port),
	}
}

// ArgValue returns the value of a --name=value argument in args, as a gateway's recorded Args
// hold them, and whether it is present.
func ArgValue(args []string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v, true
		}
	}
	return "", false
}
