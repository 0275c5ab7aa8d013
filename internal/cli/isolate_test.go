package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/aboxhq/abox/internal/isolate"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/telemetry"
)

// TestIsolateScripts runs the scripts of abox diff, merge and discard in testdata/isolate. Until
// `abox run --isolated` exists, the command isolated stands in for a run: it makes the clone,
// writes one file into it as the agent would, and collects it.
func TestIsolateScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "isolate"),
		RequireExplicitExec: true,
		UpdateScripts:       *update,
		Cmds:                map[string]func(ts *testscript.TestScript, neg bool, args []string){"isolated": cmdIsolated, "recorded": cmdRecorded},
		Setup: func(env *testscript.Env) error {
			env.Setenv("HOME", filepath.Join(env.WorkDir, "home"))
			env.Setenv("ABOX_CONFIG_HOME", filepath.Join(env.WorkDir, "config"))
			env.Setenv("ABOX_STATE_HOME", filepath.Join(env.WorkDir, "state"))
			env.Setenv("GIT_CONFIG_NOSYSTEM", "1")
			env.Setenv("NO_COLOR", "1")
			env.Setenv("GORACE", "atexit_sleep_ms=0")
			return fixAgentIdentity(filepath.Join(env.WorkDir, "config", "config.yaml"))
		},
	})
}

// cmdIsolated makes an isolated run of the project DIR whose agent writes FILE:
//
//	isolated DIR ID FILE CONTENT
func cmdIsolated(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 4 {
		ts.Fatalf("usage: isolated DIR ID FILE CONTENT")
	}
	ws, err := filepath.EvalSymlinks(ts.MkAbs(args[0]))
	ts.Check(err)
	r := &isolate.Repo{Project: paths.Paths{State: ts.Getenv("ABOX_STATE_HOME")}.Project(ws)}
	// The test binary's own environment is not the script's: git must find the script's HOME.
	os.Setenv("HOME", ts.Getenv("HOME"))
	os.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	_, err = r.Create(context.Background(), isolate.CreateOptions{ID: args[1]})
	ts.Check(err)
	p := filepath.Join(r.Project.Clone(args[1]), filepath.FromSlash(args[2]))
	ts.Check(os.MkdirAll(filepath.Dir(p), 0o755))
	ts.Check(os.WriteFile(p, []byte(args[3]+"\n"), 0o644))
	_, err = r.Collect(context.Background(), args[1])
	ts.Check(err)
}

// cmdRecorded appends the record of isolated run ID to the project's runs.jsonl, as abox run
// writes it:
//
//	recorded DIR ID
func cmdRecorded(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: recorded DIR ID")
	}
	ws, err := filepath.EvalSymlinks(ts.MkAbs(args[0]))
	ts.Check(err)
	proj := paths.Paths{State: ts.Getenv("ABOX_STATE_HOME")}.Project(ws)
	ts.Check(telemetry.AppendRun(proj.RunsIndex(), telemetry.RunRecord{ID: args[1], TS: "2026-12-02T00:00:00Z",
		Kind: "run", Outcome: "exited", DroppedPackets: -1, Workspace: "isolated", Branch: "abox/" + args[1]}))
}
