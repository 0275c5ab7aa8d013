package gateway

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/aboxhq/abox/internal/docker"
)

// PublishedPorts lists the host ports ct publishes, as "0.0.0.0:8811->8811/tcp". A gateway
// must publish none: it would hand every process on the host (and beyond) a door to tools
// whose credentials it holds.
func PublishedPorts(ct *docker.Container) []string {
	seen := map[string]bool{}
	add := func(port string, bs []docker.PortBinding) {
		for _, b := range bs {
			if b.HostPort == "" {
				continue
			}
			ip := b.HostIP
			if ip == "" {
				ip = "0.0.0.0"
			}
			seen[fmt.Sprintf("%s:%s->%s", ip, b.HostPort, port)] = true
		}
	}
	for port, bs := range ct.HostConfig.PortBindings {
		add(port, bs)
	}
	for port, bs := range ct.NetworkSettings.Ports {
		add(port, bs)
	}
	return slices.Sorted(maps.Keys(seen))
}

// ServersOf returns the --servers list a gateway container was started with: evidence from the
// machine rather than from state files.
func ServersOf(ct *docker.Container) []string {
	v, ok := ArgValue(ct.Args, "--servers")
	if !ok || v == "" {
		return nil
	}
	out := strings.Split(v, ",")
	sort.Strings(out)
	return out
}
