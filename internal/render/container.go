package render

import (
	"encoding/csv"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Mount is one --mount of a container.
type Mount struct {
	Type     string // bind, volume, tmpfs
	Source   string // host path or volume name; empty for tmpfs and anonymous volumes
	Target   string
	ReadOnly bool
}

// Arg returns the --mount value. Fields are CSV-quoted as docker parses them, so a path holding
// a comma or a quote cannot add mount options.
func (m Mount) Arg() string {
	fields := []string{"type=" + m.Type}
	if m.Source != "" {
		fields = append(fields, "source="+m.Source)
	}
	fields = append(fields, "target="+m.Target)
	if m.ReadOnly {
		fields = append(fields, "readonly")
	}
	var b strings.Builder
	w := csv.NewWriter(&b)
	w.Write(fields)
	w.Flush()
	return strings.TrimSuffix(b.String(), "\n")
}

// Container describes one container of a sandbox. It is the single model from which both the
// docker argv in runspec.json and the review copy's compose service are produced, so the two
// cannot drift apart.
type Container struct {
	Name        string // with the run placeholder
	Network     string // a network name, or "container:<name>"
	Runtime     string // the OCI runtime, when not the daemon's default: only the agent's, runsc
	User        string
	Workdir     string
	CapDrop     []string
	CapAdd      []string
	SecurityOpt []string
	Init        bool
	ReadOnly    bool
	PidsLimit   int
	Memory      string
	CPUs        string
	Tmpfs       []string
	Sysctls     map[string]string // namespaced kernel settings; netd's apply to the agent too
	Mounts      []Mount
	Env         map[string]string // non-secret values only
	Labels      map[string]string
	Image       string
	Command     []string
}

// Args returns the docker options for c, in a fixed order, without the leading verb and without
// the image and command.
func (c Container) Args() []string {
	// --pull never: a run must never fetch an image; `abox up` builds both locally.
	a := []string{"--name", c.Name, "--pull", "never", "--network", c.Network}
	if c.Runtime != "" {
		a = append(a, "--runtime", c.Runtime)
	}
	for _, k := range slices.Sorted(maps.Keys(c.Labels)) {
		a = append(a, "--label", k+"="+c.Labels[k])
	}
	for _, cap := range c.CapDrop {
		a = append(a, "--cap-drop", cap)
	}
	for _, cap := range c.CapAdd {
		a = append(a, "--cap-add", cap)
	}
	for _, o := range c.SecurityOpt {
		a = append(a, "--security-opt", o)
	}
	if c.User != "" {
		a = append(a, "--user", c.User)
	}
	if c.Init {
		a = append(a, "--init")
	}
	if c.ReadOnly {
		a = append(a, "--read-only")
	}
	if c.PidsLimit > 0 {
		a = append(a, "--pids-limit", strconv.Itoa(c.PidsLimit))
	}
	if c.Memory != "" {
		a = append(a, "--memory", c.Memory, "--memory-swap", c.Memory)
	}
	if c.CPUs != "" {
		a = append(a, "--cpus", c.CPUs)
	}
	for _, t := range c.Tmpfs {
		a = append(a, "--tmpfs", t)
	}
	for _, k := range slices.Sorted(maps.Keys(c.Sysctls)) {
		a = append(a, "--sysctl", k+"="+c.Sysctls[k])
	}
	for _, m := range c.Mounts {
		a = append(a, "--mount", m.Arg())
	}
	for _, k := range slices.Sorted(maps.Keys(c.Env)) {
		a = append(a, "--env", k+"="+c.Env[k])
	}
	if c.Workdir != "" {
		a = append(a, "--workdir", c.Workdir)
	}
	return a
}
