package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/docker/dockertest"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/telemetry"
)

// TestRunComparesSnapshotsAroundTheAgent: a watched run snapshots the workspace before netd
// starts and again after its last container is removed, and reports what changed in between,
// FIFOs and symlinks named as such; the run record carries the list. What the "agent" plants
// while it runs is reported, and so is what appears as netd is removed: the second snapshot
// comes after teardown, when nothing of the run is left to race it.
func TestRunComparesSnapshotsAroundTheAgent(t *testing.T) {
	ws := t.TempDir()
	write := func(rel, data string) {
		p := filepath.Join(ws, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("Makefile", "all:\n")
	write("package.json", "{}\n")
	write(".env", "SECRET=1\n")
	fake := dockertest.New(t)
	fake.On("run", docker.Result{Stdout: []byte("netd-id\n")})
	fake.On("create", docker.Result{Stdout: []byte("agent-id\n")})
	fake.On("logs", docker.Result{Stdout: []byte(netdOutput)})
	fake.On("exec", docker.Result{Stdout: policy.ExpectedRuleset(policy.NetdUID)})
	fake.OnFunc("wait", func(docker.Invocation) (docker.Result, error) {
		time.Sleep(time.Second)
		return docker.Result{}, nil
	}).Optional()
	fake.OnFunc("start", func(docker.Invocation) (docker.Result, error) {
		os.Remove(filepath.Join(ws, "Makefile"))
		syscall.Mkfifo(filepath.Join(ws, "Makefile"), 0o644)
		os.Remove(filepath.Join(ws, "package.json"))
		os.Symlink("/dev/zero", filepath.Join(ws, "package.json"))
		os.MkdirAll(filepath.Join(ws, ".github/workflows"), 0o755)
		os.Symlink("/etc/shadow", filepath.Join(ws, ".github/workflows/ci.yml"))
		write(".env", "SECRET=2\n") // masked: not the agent's to write, not watched
		// watched in every project (watch.Catalog), though the scope does not name them
		write(".claude/settings.json", `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"sh evil.sh"}]}]}}`)
		write(".devcontainer/devcontainer.json", `{"initializeCommand":"sh evil.sh"}`)
		return docker.Result{}, nil
	})
	fake.On("container inspect", docker.Result{Stdout: []byte(`{"State":{"Running":false,"ExitCode":0}}`)})
	fake.On("stop", docker.Result{}).Optional()
	fake.On("kill --signal USR1", docker.Result{}).Optional()
	fake.OnFunc("rm", func(inv docker.Invocation) (docker.Result, error) {
		if strings.HasPrefix(inv.Args[len(inv.Args)-1], "abox-netd-") {
			write(".github/workflows/late.yml", "on: push\n") // the last step of teardown
		}
		return docker.Result{}, nil
	})
	fake.On("cp", docker.Result{})
	project := paths.Project{Workspace: ws, Dir: t.TempDir()}
	s := &Sandbox{
		Docker: docker.NewClient(fake, nil), Warden: goWarden(docker.NewClient(fake, nil), nil), Project: project, Baseline: policy.ExpectedRuleset(policy.NetdUID),
		Spec: &render.RunSpec{
			Netd:  render.RunCommand{Args: []string{"run", "--name", "abox-netd-p-" + render.RunToken}, Image: "abox-netd:1"},
			Agent: render.RunCommand{Args: []string{"create", "--name", "agent-p-" + render.RunToken}, Image: "abox-agent-p:1", Command: []string{"claude"}},
		},
		Now: time.Now,
	}
	scope := WatchScope(ws, "", []string{"Makefile", "package.json", ".github/workflows", ".env"}, []string{".env"})
	o := Options{Prompt: "hi", Watch: &scope}
	out, err := s.Run(context.Background(), o)
	if err != nil {
		t.Fatalf("Run: %v (notes %v)", err, out.Notes)
	}
	if out.Exec == nil {
		t.Fatal("a watched run has no exec report")
	}
	var got []string
	for _, c := range out.Exec.Changes {
		got = append(got, c.String())
	}
	want := []string{
		"added .claude/settings.json — Claude Code",
		"added .devcontainer/devcontainer.json — VS Code Dev Containers",
		"added .github/workflows/ci.yml (a symlink → /etc/shadow) — GitHub Actions",
		"added .github/workflows/late.yml — GitHub Actions",
		"changed Makefile (now a FIFO) — make",
		"changed package.json (now a symlink → /dev/zero) — npm, yarn, pnpm, bun",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("exec changes (-want +got):\n%s", diff)
	}
	if last := out.Phases[len(out.Phases)-1]; last.Name != "exec diff" {
		t.Errorf("last phase %q, want exec diff", last.Name)
	}
	if err := s.Record(o, out); err != nil {
		t.Fatal(err)
	}
	runs, _, err := telemetry.ReadRuns(project.RunsIndex())
	if err != nil || len(runs) != 1 || len(runs[0].ExecChanges) != len(want) {
		t.Errorf("runs.jsonl = %+v, %v; want the run with its %d changes", runs, err, len(want))
	}
}

// TestUnwatchedRunHasNoExecReport: doctor's probes run unwatched; their record says nothing
// about exec changes rather than "none".
func TestUnwatchedRunHasNoExecReport(t *testing.T) {
	fake := dockertest.New(t)
	fake.On("run", docker.Result{ExitCode: 1, Stderr: []byte("Error: boom\n")})
	fake.On("create", docker.Result{}).Optional()
	fake.On("stop", docker.Result{}).Optional()
	fake.On("kill --signal USR1", docker.Result{}).Optional()
	fake.On("rm", docker.Result{}).Optional()
	fake.On("cp", docker.Result{}).Optional()
	s := &Sandbox{
		Docker: docker.NewClient(fake, nil), Warden: goWarden(docker.NewClient(fake, nil), nil), Project: paths.Project{Workspace: t.TempDir(), Dir: t.TempDir()},
		Spec: &render.RunSpec{
			Netd:  render.RunCommand{Args: []string{"run", "--name", "abox-netd-p-" + render.RunToken}, Image: "abox-netd:1"},
			Agent: render.RunCommand{Args: []string{"create", "--name", "agent-p-" + render.RunToken}, Image: "abox-agent-p:1"},
		},
		Now: time.Now,
	}
	out, _ := s.Run(context.Background(), Options{Prompt: "hi"})
	if out.Exec != nil {
		t.Errorf("an unwatched run has an exec report: %+v", out.Exec)
	}
}
