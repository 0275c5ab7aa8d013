//go:build bench && e2e

package bench

import (
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The figures of the newer features: an isolated run's start against a live run's, and a
// second run's `npm install` with the project's npm cache (mounts.caches) against without.

// benchIsolated: a no-op isolated run (clone made, agent on it, branch collected) against the
// same no-op live run of a project of the same size.
func benchIsolated(t *testing.T, w *world) {
	ws := w.secondWorkspace(t, "iso")
	writeFile(t, filepath.Join(ws, "README"), "an isolated bench project\n")
	gitInit(t, w, ws)
	p := w.addProject(t, "bench-iso", ws, smallEntries, w.small.bin)
	s := rotate(*pairs, func() float64 {
		return mustOK(t, "abox run --isolated", w.abox(t, p, "run", "--isolated", noopPrompt)).Wall.Seconds()
	}, func() float64 {
		return mustOK(t, "abox run", w.abox(t, p, "run", noopPrompt)).Wall.Seconds()
	})
	f := NewFigure("8-isolated-run", "abox run --isolated of a no-op prompt (clone, run, collect) vs the same live run", "s",
		NewSeries("isolated run", s[0]), NewSeries("live run", s[1]), nil)
	f.Command = "bench/run -run TestBench/isolated"
	f.Note("the project is a one-commit repository; the clone is filled from a bundle of its history, so the " +
		"difference grows with the repository's size")
	w.write(t, f)
}

// gitInit makes ws a repository of one commit owned by the agent's uid, as a user's checkout
// is, reachable by that uid (abox runs git in it as its owner).
func gitInit(t *testing.T, w *world, ws string) {
	t.Helper()
	for d := w.h.Dir; d != "/" && strings.HasPrefix(d, os.TempDir()); d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "first"}} {
		cmd := exec.Command("git", append([]string{"-c", "safe.directory=*", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "-C", ws}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if out, err := exec.Command("chown", "-R", "1000:1000", ws).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v\n%s", err, out)
	}
}

// npmFixture is the package the cache figure installs: small, with a handful of dependencies.
const npmFixture = "express@4.21.2"

var npmMillis = regexp.MustCompile(`npm-ms (\d+) rc=0`)

// benchCaches: a second run's `npm install` of a fixture package, fetched from the registry the
// host's npm is configured with through netd, with the project's npm cache volume (filled by the
// first run) against a project without one. Only the install is timed, inside the run.
func benchCaches(t *testing.T, w *world) {
	out, err := exec.Command("npm", "config", "get", "registry").Output()
	if err != nil {
		t.Fatalf("npm config get registry (the cache figure installs from it): %v", err)
	}
	reg, err := url.Parse(strings.TrimSpace(string(out)))
	if err != nil || reg.Scheme != "https" || reg.Hostname() == "" {
		t.Fatalf("npm registry %q is not an https URL", strings.TrimSpace(string(out)))
	}
	base := strings.TrimSuffix(reg.String(), "/")
	// The registry continues addProject's egress list; the rest follows it.
	extra := "  - \"" + reg.Hostname() + "\"\ntoolchains: [node]\n"
	cached := w.addProjectWith(t, "bench-cache", w.secondWorkspace(t, "cache"), smallEntries, w.small.bin, extra+"mounts:\n  caches: [npm]\n")
	plain := w.addProjectWith(t, "bench-nocache", w.secondWorkspace(t, "nocache"), smallEntries, w.small.bin, extra)
	t.Cleanup(func() { w.h.Docker("volume", "rm", "-f", "abox-cache-"+cached.hash+"-npm") })
	s := rotate(*pairs, func() float64 { return w.installMillis(t, cached, base) }, func() float64 { return w.installMillis(t, plain, base) })
	f := NewFigure("9-npm-cache", "a second run's npm install of "+npmFixture+" with the project's npm cache vs without", "ms",
		NewSeries("with mounts.caches: [npm]", s[0]), NewSeries("without", s[1]), nil)
	f.Command = "bench/run -run TestBench/caches"
	f.Note("`npm install --prefer-offline` from the registry `npm config get registry` names, through netd, in a " +
		"fresh directory each run; the cache was filled by the warm-up run; only the install is timed, inside the " +
		"agent. Without --prefer-offline npm revalidates every package's metadata with the registry, cache or not, " +
		"and the cache saved nothing (with 1.42× the time of no cache in a run of an earlier version of this figure, 3 pairs, load 12)")
	w.write(t, f)
}

// installMillis runs one `npm install` of the fixture in a fresh directory of p's agent and
// returns how long the install took, in milliseconds.
func (w *world) installMillis(t *testing.T, p *project, base string) float64 {
	t.Helper()
	prompt := `d=$(mktemp -d) && cd "$d" && t0=$(date +%s%N) && npm install --prefer-offline --no-audit --no-fund --loglevel=error --registry '` + base + `' ` + npmFixture +
		` >/tmp/npm.log 2>&1; rc=$?; echo "npm-ms $(( ($(date +%s%N)-t0)/1000000 )) rc=$rc"; tail -3 /tmp/npm.log`
	m := mustOK(t, "abox run (npm install)", w.abox(t, p, "run", prompt))
	got := npmMillis.FindStringSubmatch(m.Stdout)
	if got == nil {
		t.Fatalf("npm install did not succeed in %s:\n%s", p.name, tail(m.Stdout))
	}
	ms, _ := strconv.ParseFloat(got[1], 64)
	return ms
}
