package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/docker/dockertest"
	"github.com/aboxhq/abox/internal/doctor"
)

// doctorApp is an App on temporary homes whose docker is a fake with a running daemon, on
// which nothing was built: every inspect answers "no such object".
func doctorApp(t *testing.T) (*App, *bytes.Buffer, *bytes.Buffer, string) {
	t.Helper()
	root := t.TempDir()
	env := map[string]string{
		"HOME": filepath.Join(root, "home"), "ABOX_CONFIG_HOME": filepath.Join(root, "config"),
		"ABOX_STATE_HOME": filepath.Join(root, "state"), "ABOX_DOCKER_MCP_HOME": filepath.Join(root, "mcp"),
	}
	exe, _ := os.Executable()
	var out, errb bytes.Buffer
	a := &App{
		In: strings.NewReader(""), Out: &out, Err: &errb, Version: "0.0.0-test", Executable: exe,
		Env: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		Now: func() time.Time { return time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC) },
	}
	f := dockertest.New(t)
	f.On("version", docker.Result{Stdout: []byte(`{"Client":{"Version":"28.2.2","ApiVersion":"1.41"},"Server":{"Version":"20.10.24","ApiVersion":"1.41"}}`)}).Optional()
	f.On("ps", docker.Result{}).Optional()
	f.On("", docker.Result{ExitCode: 1, Stderr: []byte("Error: No such object: x\n")}).Optional()
	a.dockerClient = docker.NewClient(f, nil)
	ws := filepath.Join(root, "proj")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	agentOwned(t, ws)
	return a, &out, &errb, ws
}

// TestDoctorAfterInit: right after init, doctor exits 2, and every warn and fail it reports
// carries a hint that names an abox command.
func TestDoctorAfterInit(t *testing.T) {
	a, out, errb, ws := doctorApp(t)
	ctx := context.Background()
	if code := a.Run(ctx, []string{"init", "--yes", "-C", ws, "--project", "p"}); code != ExitOK {
		t.Fatalf("init exit %d: %s", code, errb)
	}
	out.Reset()
	if code := a.Run(ctx, []string{"doctor", "-C", ws, "--json"}); code != ExitDoctor {
		t.Fatalf("doctor exit %d, want %d: %s", code, ExitDoctor, errb)
	}
	var rep doctor.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, out)
	}
	if rep.Summary.Fail == 0 {
		t.Error("doctor after init reports no failure")
	}
	for _, r := range rep.Checks {
		if (r.Status == doctor.Warn || r.Status == doctor.Fail) && !strings.Contains(r.Hint, "`abox ") {
			t.Errorf("%s: %s hint %q names no abox command", r.ID, r.Status, r.Hint)
		}
	}
}

// TestRunRefusesBypassWhenABoundaryCheckFails: artifacts that verify and are current, but whose
// directory others can write, refuse bypassPermissions with exit 3 naming the check; another
// permission mode goes on to the next preflight step.
func TestRunRefusesBypassWhenABoundaryCheckFails(t *testing.T) {
	for _, tc := range []struct {
		mode string
		want int
	}{{"bypassPermissions", ExitBoundary}, {"acceptEdits", ExitError}} {
		t.Run(tc.mode, func(t *testing.T) {
			a, _, errb, ws := doctorApp(t)
			ctx := context.Background()
			if code := a.Run(ctx, []string{"init", "--yes", "-C", ws, "--project", "p", "--permission-mode", tc.mode}); code != ExitOK {
				t.Fatalf("init exit %d: %s", code, errb)
			}
			ps, _ := a.Paths()
			st := ps.Project(realPath(t, ws))
			raw, _ := os.ReadFile(filepath.Join(ws, "agentbox.yaml"))
			if err := os.WriteFile(st.Approved(), raw, 0o600); err != nil { // as `abox up` leaves it
				t.Fatal(err)
			}
			os.Chmod(filepath.Join(st.Artifacts(), "agent"), 0o777)
			errb.Reset()
			code := a.Run(ctx, []string{"run", "-C", ws, "hello"})
			if code != tc.want {
				t.Fatalf("run exit %d, want %d: %s", code, tc.want, errb)
			}
			refused := strings.Contains(errb.String(), "refusing bypassPermissions: 1 boundary check failed:") &&
				strings.Contains(errb.String(), "boundary.artifacts-private: writable by group or others")
			if refused != (tc.want == ExitBoundary) {
				t.Errorf("stderr:\n%s", errb)
			}
		})
	}
}

func realPath(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// agentOwned gives dir to uid and gid 1000 when the tests run as root (CI), so that the agent,
// which runs as the workspace owner, is not refused as root; otherwise dir is the tester's.
func agentOwned(t *testing.T, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		return
	}
	if err := os.Chown(dir, 1000, 1000); err != nil {
		t.Fatal(err)
	}
}
