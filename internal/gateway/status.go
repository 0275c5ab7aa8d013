package gateway

import (
	"context"
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

// Status is one profile's gateway as `abox gateway status` shows it; its JSON form is stable.
type Status struct {
	Profile   string `json:"profile"`
	Container string `json:"container"`
	State     string `json:"state"`  // running, exited, …, or missing
	Health    string `json:"health"` // healthy, unhealthy, open, unknown (not probed), or "" when not running
	Detail    string `json:"detail,omitempty"`
	URL       string `json:"url"`
	Image     string `json:"image,omitempty"`
	// Current is false when the container differs from what `gateway up` would start now.
	Current        bool     `json:"current"`
	Projects       []string `json:"projects"`
	Servers        []string `json:"servers"` // from the container's own --servers
	Remote         []string `json:"remote"`
	PublishedPorts []string `json:"published_ports"`
	Tools          []string `json:"tools,omitempty"`
}

// Profiles returns the profiles a command is about: names, when it names any (a
// [*UnknownProfileError] for the first that config.yaml does not define), else every
// configured profile, sorted. It asks no daemon.
func (e *Env) Profiles(names []string) ([]string, error) {
	if len(names) == 0 {
		return e.Config.ProfileNames(), nil
	}
	for _, n := range names {
		if _, ok := e.Config.Profiles[n]; !ok {
			return nil, unknownProfile(e, n)
		}
	}
	return names, nil
}

// Statuses is [ProfileStatus] of each of profiles, in order; the first error ends it.
func Statuses(ctx context.Context, e *Env, profiles []string, tools bool) ([]Status, error) {
	var out []Status
	for _, prof := range profiles {
		st, err := ProfileStatus(ctx, e, prof, tools)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// ProfileStatus gathers one profile's status from the machine: the container, its arguments,
// its ports and a live probe from a netd image. tools lists a healthy gateway's tools.
func ProfileStatus(ctx context.Context, e *Env, profile string, tools bool) (Status, error) {
	plan, token, err := LoadPlan(ctx, e, profile, false)
	if err != nil {
		return Status{}, err
	}
	st := Status{Profile: profile, Container: Name(profile), URL: plan.URL(), State: "missing",
		Projects: nonNil(plan.Union.Projects), Servers: []string{}, Remote: nonNil(plan.Union.RemoteNames()), PublishedPorts: []string{}}
	mgr := e.Manager()
	ct, err := mgr.Inspect(ctx, profile)
	if err != nil || ct == nil {
		return st, err
	}
	st.State, st.Image = ct.State.Status, ct.Config.Image
	st.Servers = nonNil(ServersOf(ct))
	st.PublishedPorts = nonNil(PublishedPorts(ct))
	st.Current = ct.Config.Labels["abox.fingerprint"] == plan.Container.Fingerprint
	if !ct.State.Running {
		return st, nil
	}
	st.Health = "unknown"
	img := ProbeImage(ctx, e, plan, "")
	if img == "" {
		st.Detail = "no netd image to probe from"
		return st, nil
	}
	res, err := mgr.Probe(ctx, profile, e.Config.Network, img, plan.Container.Port, token)
	switch {
	case err != nil:
		st.Health, st.Detail = "unhealthy", Redact(err.Error(), token)
	case !res.OK:
		st.Health, st.Detail = "unhealthy", Redact(res.Error, token)
	case !res.AuthEnforced():
		st.Health, st.Detail = "open", "does not enforce its token: "+res.Auth.String()+"; abox refuses to use it"
	default:
		st.Health = "healthy"
		if tools {
			st.Tools = nonNil(res.ToolNames())
		}
	}
	return st, nil
}

// nonNil keeps an empty list a list in JSON.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
