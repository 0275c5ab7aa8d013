package cli_test

import (
	"flag"
	"os"
	"path/filepath"
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
			"mkfifo":   cmdMkfifo,
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
			return os.MkdirAll(filepath.Join(env.WorkDir, "home"), 0o755)
		},
	})
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
