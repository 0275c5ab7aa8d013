package cli_test

import (
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/aboxhq/abox/internal/cli"
	"github.com/aboxhq/abox/internal/docker/dockertest"
	"github.com/aboxhq/abox/internal/paths"
)

var update = flag.Bool("update", false, "rewrite testscript files with the actual output")

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"abox":   func() { os.Exit(cli.Main()) },
		"docker": dockertest.FakeBinary,
	})
}

// TestScripts runs the CLI scripts in testdata/script with config and state isolated per script.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "script"),
		RequireExplicitExec: true,
		UpdateScripts:       *update,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"statedir": cmdStateDir,
			"chown":    cmdChown,
			"mkfifo":   cmdMkfifo,
			"binsum":   cmdBinSum,
		},
		Condition: func(cond string) (bool, error) {
			if cond == "root" {
				return os.Geteuid() == 0, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Setup: func(env *testscript.Env) error {
			env.Setenv("HOME", filepath.Join(env.WorkDir, "home"))
			env.Setenv("ABOX_CONFIG_HOME", filepath.Join(env.WorkDir, "config"))
			env.Setenv("ABOX_STATE_HOME", filepath.Join(env.WorkDir, "state"))
			env.Setenv("ABOX_DOCKER_MCP_HOME", filepath.Join(env.WorkDir, "mcp"))
			env.Setenv("NO_COLOR", "1")
			// abox and docker here are this race-enabled test binary, which would sleep a second
			// at every exit.
			env.Setenv("GORACE", "atexit_sleep_ms=0")
			if err := os.MkdirAll(filepath.Join(env.WorkDir, "home"), 0o755); err != nil {
				return err
			}
			return fixAgentIdentity(filepath.Join(env.WorkDir, "config", "config.yaml"))
		},
	})
}

// fixAgentIdentity gives every script the agent identity 1000:1000 through config.yaml (added to
// the script's own config.yaml, or as the only key of a new one): the agent runs as the
// workspace owner, the scripts' workspaces belong to whoever runs the tests (root in CI, which
// abox refuses), and their expectations should not depend on who that is. Scripts about the
// owner itself (agent_identity.txtar) remove it.
func fixAgentIdentity(path string) error {
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	if strings.Contains(string(data), "\nagent:") || strings.HasPrefix(string(data), "agent:") {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	if len(data) > 0 && !strings.HasSuffix(string(data), "\n") {
		data = append(data, '\n')
	}
	return os.WriteFile(path, append(data, "agent: {uid: 1000, gid: 1000}\n"...), 0o600)
}

// cmdChown sets the owner of a path, as root could:
//
//	chown UID:GID PATH
func cmdChown(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: chown UID:GID PATH")
	}
	u, g, _ := strings.Cut(args[0], ":")
	uid, err1 := strconv.Atoi(u)
	gid, err2 := strconv.Atoi(g)
	if err1 != nil || err2 != nil {
		ts.Fatalf("chown: %q is not UID:GID", args[0])
	}
	ts.Check(os.Chown(ts.MkAbs(args[1]), uid, gid))
}

// cmdStateDir sets an environment variable to a project's state directory:
//
//	statedir NAME DIR
func cmdStateDir(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: statedir NAME DIR")
	}
	ws, err := filepath.EvalSymlinks(ts.MkAbs(args[1]))
	ts.Check(err)
	ts.Setenv(args[0], filepath.Join(ts.Getenv("ABOX_STATE_HOME"), "projects", paths.Hash(ws)))
}

// cmdMkfifo replaces a file with a FIFO, as an agent can:
//
//	mkfifo PATH
func cmdMkfifo(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: mkfifo PATH")
	}
	p := ts.MkAbs(args[0])
	os.Remove(p)
	ts.Check(syscall.Mkfifo(p, 0o644))
}

// cmdBinSum sets an environment variable to the sha256 of the abox binary the scripts run
// (this test binary), which names the netd image built from it:
//
//	binsum NAME
func cmdBinSum(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: binsum NAME")
	}
	exe, err := os.Executable()
	ts.Check(err)
	data, err := os.ReadFile(exe)
	ts.Check(err)
	ts.Setenv(args[0], fmt.Sprintf("%x", sha256.Sum256(data)))
}
