package render_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/render"
)

// loginProblems lists how the login check's argv breaks its invariants. That container mounts
// the agent's credential volume, so it gets less than the agent: no network at all, no
// capability, no new privileges, a read-only root, the agent's own uid, the agent's image, and
// exactly one mount, the ~/.claude volume, read-only. No other flag may appear.
func loginProblems(rs render.RunSpec) []string {
	lc := rs.LoginCheck
	a := lc.Args
	var out []string
	if len(a) < 2 || a[0] != "run" || a[1] != "--rm" {
		out = append(out, fmt.Sprintf("argv starts %q, want run --rm", a))
	}
	id, ok := rs.AgentIdentity()
	want := map[string]string{"--pull": "never", "--network": "none", "--cap-drop": "ALL",
		"--security-opt": "no-new-privileges", "--user": id.String()}
	if !ok || id.UID == 0 {
		out = append(out, "the agent has no non-root numeric --user to run as")
	}
	for _, flag := range slices.Sorted(maps.Keys(want)) {
		if v := flagValues(a, flag); len(v) != 1 || v[0] != want[flag] {
			out = append(out, fmt.Sprintf("%s = %q, want exactly %q", flag, v, want[flag]))
		}
	}
	if !slices.Contains(a, "--read-only") {
		out = append(out, "no --read-only")
	}
	mounts := flagValues(a, "--mount")
	wantMount := "type=volume,source=" + rs.ClaudeVol + ",target=/claude,readonly"
	if len(mounts) != 1 || mounts[0] != wantMount {
		out = append(out, fmt.Sprintf("--mount %q, want exactly %q", mounts, wantMount))
	}
	for _, l := range flagValues(a, "--label") {
		if !strings.HasPrefix(l, "abox.") {
			out = append(out, "label "+l)
		}
	}
	// Every other argument is one of the flags above (or its value): anything new, a
	// capability, a device, a published port, another network, an env var, is a problem.
	valued := map[string]bool{"--pull": true, "--network": true, "--cap-drop": true, "--security-opt": true,
		"--user": true, "--mount": true, "--label": true}
	for i := 2; i < len(a); i++ {
		switch {
		case valued[a[i]]:
			i++
		case a[i] == "--read-only":
		default:
			out = append(out, "unexpected argument "+a[i])
		}
	}
	if lc.Image != rs.Agent.Image {
		out = append(out, fmt.Sprintf("image %q, want the agent's %q", lc.Image, rs.Agent.Image))
	}
	if !slices.Equal(lc.Command, []string{"/bin/sh", "-c", render.LoginScript}) {
		out = append(out, fmt.Sprintf("command %q, want the login script", lc.Command))
	}
	return out
}

func checkLoginArgv(t *testing.T, rs render.RunSpec) {
	t.Helper()
	for _, p := range loginProblems(rs) {
		t.Errorf("login check argv: %s", p)
	}
}

// TestLoginInvariantsCatch: the invariants of the login check's argv fail on every way of
// widening it, so a render change that widens it fails TestInvariants.
func TestLoginInvariantsCatch(t *testing.T) {
	rs := runSpecOf(t, mustRender(t, loadSpec(t, "minimal")))
	if p := loginProblems(rs); len(p) > 0 {
		t.Fatalf("the rendered login check breaks its invariants: %q", p)
	}
	insert := func(extra ...string) func(*render.RunSpec) {
		return func(r *render.RunSpec) {
			r.LoginCheck.Args = append(slices.Clip(r.LoginCheck.Args), extra...)
		}
	}
	replace := func(old, new string) func(*render.RunSpec) {
		return func(r *render.RunSpec) {
			r.LoginCheck.Args = slices.Clone(r.LoginCheck.Args)
			for i, a := range r.LoginCheck.Args {
				if a == old {
					r.LoginCheck.Args[i] = new
				}
			}
		}
	}
	vol := "type=volume,source=" + rs.ClaudeVol + ",target=/claude"
	for name, mutate := range map[string]func(*render.RunSpec){
		"a capability":        insert("--cap-add", "DAC_OVERRIDE"),
		"the volume writable": replace(vol+",readonly", vol),
		"a writable bind":     insert("--mount", "type=bind,source=/,target=/host"),
		"a read-only bind":    insert("--mount", "type=bind,source=/etc,target=/host,readonly"),
		"privileged":          insert("--privileged"),
		"a network":           replace("none", "bridge"),
		"root":                replace("1000:1000", "0:0"),
		"new privileges":      replace("no-new-privileges", "no-new-privileges=false"),
		"a writable root":     replace("--read-only", "--init"),
		"an env var":          insert("--env", "ANTHROPIC_API_KEY=x"),
		"a device":            insert("--device", "/dev/fuse"),
		"a published port":    insert("--publish", "8080:8080"),
		"the docker socket":   insert("--volume", "/var/run/docker.sock:/var/run/docker.sock"),
		"another image":       func(r *render.RunSpec) { r.LoginCheck.Image = "alpine" },
		"another command": func(r *render.RunSpec) {
			r.LoginCheck.Command = []string{"/bin/sh", "-c", "cat /claude/.credentials.json"}
		},
		"the pull policy":       replace("never", "always"),
		"cap-drop of one":       replace("ALL", "NET_RAW"),
		"a second network flag": insert("--network", "host"),
	} {
		r := rs
		mutate(&r)
		if p := loginProblems(r); len(p) == 0 {
			t.Errorf("login check argv with %s: %q passes the invariants", name, r.LoginCheck.Argv())
		}
	}
}
