package hostprobe

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeTools puts shell scripts named after tools first on PATH. Each script logs its argv to
// args.log in the directory, then runs its body.
func fakeTools(t *testing.T, tools map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range tools {
		script := "#!/bin/sh\necho \"$0 $*\" >>" + filepath.Join(dir, "args.log") + "\n" + body + "\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir)
	return dir
}

func argsLog(t *testing.T, dir string) string {
	t.Helper()
	data, _ := os.ReadFile(filepath.Join(dir, "args.log"))
	return strings.ReplaceAll(string(data), dir+"/", "")
}

// TestSystemAsksTheTools: System runs the host's npm and go with the questions abox asks and
// returns their answers; a tool that fails, or is absent, is an error that says so.
func TestSystemAsksTheTools(t *testing.T) {
	dir := fakeTools(t, map[string]string{
		"npm": `echo "  https://npm.mirror.test/  "`,
		"go":  `printf 'https://proxy.mirror.test,direct\n\n'`,
	})
	ctx := context.Background()
	reg, err := System{}.NPMRegistry(ctx)
	if err != nil || reg != "https://npm.mirror.test/" {
		t.Errorf("NPMRegistry = %q, %v", reg, err)
	}
	vals, err := System{}.GoEnv(ctx, "GOPROXY", "GOSUMDB")
	if diff := cmp.Diff([]string{"https://proxy.mirror.test,direct", ""}, vals); err != nil || diff != "" {
		t.Errorf("GoEnv = %q, %v (-want +got):\n%s", vals, err, diff)
	}
	if got, want := argsLog(t, dir), "npm config get registry\ngo env GOPROXY GOSUMDB\n"; got != want {
		t.Errorf("the tools were run as %q, want %q", got, want)
	}
	if _, err := (System{}).GoEnv(ctx, "GOPROXY"); err == nil || !strings.Contains(err.Error(), "2 values for 1 names") {
		t.Errorf("GoEnv with a surplus line = %v", err)
	}
	if p, err := LookPath("npm"); err != nil || p != filepath.Join(dir, "npm") {
		t.Errorf("LookPath(npm) = %q, %v", p, err)
	}
}

func TestSystemToolFails(t *testing.T) {
	fakeTools(t, map[string]string{"npm": "echo 'npm ERR! config broken' >&2; exit 1"})
	_, err := System{}.NPMRegistry(context.Background())
	if err == nil || !strings.HasPrefix(err.Error(), "npm config get registry: exit status 1: npm ERR! config broken") {
		t.Errorf("NPMRegistry of a failing npm = %v", err)
	}
	_, err = System{}.GoEnv(context.Background(), "GOPROXY")
	if err == nil || !strings.Contains(err.Error(), "go env GOPROXY: exec: \"go\": executable file not found") {
		t.Errorf("GoEnv without go = %v", err)
	}
}

// TestSystemDeadline: a tool that hangs is stopped when the caller's deadline passes.
func TestSystemDeadline(t *testing.T) {
	fakeTools(t, map[string]string{"npm": "exec sleep 30"})
	t.Setenv("PATH", os.Getenv("PATH")+":/bin:/usr/bin")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := (System{}).NPMRegistry(ctx); err == nil {
		t.Error("NPMRegistry of a hanging npm succeeded")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("NPMRegistry returned after %v, long after its deadline", d)
	}
}

// TestResolvConf: only IPv4 global unicast nameservers are kept, each once and in order, with
// port 53; an unreadable file has none.
func TestResolvConf(t *testing.T) {
	path := filepath.Join(t.TempDir(), "resolv.conf")
	conf := "# generated\nsearch example.test\nnameserver 127.0.0.53\nnameserver 192.0.2.1\nnameserver 2001:db8::1\n" +
		"nameserver 10.0.0.2 # site\nnameserver 192.0.2.1\nnameserver 0.0.0.0\nnameserver not-an-address\nnameserver\noptions edns0\n"
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"192.0.2.1:53", "10.0.0.2:53"}, ResolvConf(path)); diff != "" {
		t.Errorf("ResolvConf (-want +got):\n%s", diff)
	}
	if got := ResolvConf(filepath.Join(t.TempDir(), "none")); got != nil {
		t.Errorf("ResolvConf of a missing file = %q", got)
	}
	for _, s := range (System{}).Resolvers() { // this host's: whatever they are, in the same form
		if !strings.HasSuffix(s, ":53") {
			t.Errorf("System.Resolvers has %q", s)
		}
	}
}

// TestToolsNotAskedInTheWorkspace: the tools run in /, never in abox's working directory,
// which is often the workspace the agent writes: a .npmrc planted there would otherwise name
// the registry abox builds Claude Code from.
func TestToolsNotAskedInTheWorkspace(t *testing.T) {
	fakeTools(t, map[string]string{"npm": `pwd`, "go": `pwd`})
	ws := t.TempDir()
	t.Chdir(ws)
	reg, err := System{}.NPMRegistry(context.Background())
	if err != nil || reg != "/" {
		t.Errorf("npm ran in %q (%v), want /", reg, err)
	}
	dirs, err := System{}.GoEnv(context.Background(), "GOPROXY")
	if err != nil || len(dirs) != 1 || dirs[0] != "/" {
		t.Errorf("go ran in %q (%v), want /", dirs, err)
	}
}
