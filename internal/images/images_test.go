package images

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/docker/dockertest"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/render"
)

const agentTag = "abox-agent-p:1"

func sha256Hex(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

// fixture is a project in a temporary directory, a Builder whose docker is a recording fake,
// and what the builder printed.
type fixture struct {
	t        *testing.T
	dir      string
	b        *Builder
	p        Project
	fake     *dockertest.Fake
	progress *bytes.Buffer
}

func newFixture(t *testing.T, cfg *config.Config) *fixture {
	t.Helper()
	dir := t.TempDir()
	ps := paths.Paths{Config: filepath.Join(dir, "config"), State: filepath.Join(dir, "state")}
	f := &fixture{t: t, dir: dir, fake: dockertest.New(t), progress: &bytes.Buffer{}}
	f.p = Project{Name: "p", Config: cfg, Paths: ps, State: ps.Project(filepath.Join(dir, "work"))}
	f.b = &Builder{
		Docker: docker.NewClient(f.fake, nil), Home: filepath.Join(dir, "home"),
		Now: func() time.Time { return time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC) },
		Progress: func(format string, args ...any) {
			fmt.Fprintf(f.progress, format+"\n", args...)
		},
	}
	return f
}

// write writes data to rel under the fixture's directory and returns its path.
func (f *fixture) write(rel string, data []byte) string {
	f.t.Helper()
	path := filepath.Join(f.dir, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		f.t.Fatal(err)
	}
	return path
}

// render renders the project's artifacts as `abox render` does and writes its Dockerfiles
// where a build reads them. It returns the agent's Dockerfile.
func (f *fixture) render(npmRegistry string, certs []render.File) []byte {
	f.t.Helper()
	m, err := manifest.Parse([]byte("version: 1\nproject: p\nprofile: default\n"), manifest.FileName)
	if err != nil {
		f.t.Fatal(err)
	}
	arts, err := render.Render(render.Spec{
		Version: "test", Manifest: m, Config: f.p.Config, Paths: f.p.Paths, Project: f.p.State,
		Home: f.b.Home, CACerts: certs, NPMRegistry: npmRegistry, NetdBinary: strings.Repeat("b", 64),
	})
	if err != nil {
		f.t.Fatalf("render: %v", err)
	}
	var agent []byte
	for _, a := range arts {
		if a.Name == render.AgentDockerfile || a.Name == render.NetdDockerfile {
			f.write(filepath.Join("state", "projects", f.p.State.Hash, "artifacts", a.Name), a.Data)
			if a.Name == render.AgentDockerfile {
				agent = a.Data
			}
		}
	}
	if agent == nil || f.p.State.Artifacts() != filepath.Join(f.dir, "state", "projects", f.p.State.Hash, "artifacts") {
		f.t.Fatalf("no agent Dockerfile rendered, or artifacts are not at %s", f.p.State.Artifacts())
	}
	return agent
}

// builds returns the argv of every docker build the fake saw.
func (f *fixture) builds() [][]string {
	var out [][]string
	for _, c := range f.fake.Calls() {
		if c.Args[0] == "build" {
			out = append(out, c.Args)
		}
	}
	return out
}

var noImage = docker.Result{ExitCode: 1, Stderr: []byte("Error: No such image: " + agentTag + "\n")}

func testCert(t *testing.T, cn string) []byte {
	t.Helper()
	return pemBlock("CERTIFICATE", []byte("not really DER: "+cn))
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// contextTree lists dir: context path → mode and content.
func contextTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			out[filepath.ToSlash(rel)+"/"] = info.Mode().String()
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out[filepath.ToSlash(rel)] = info.Mode().String() + " " + string(data)
		return nil
	})
	if err != nil {
		t.Fatalf("walking %s: %v", dir, err)
	}
	return out
}

// TestAgentStagesAndBuilds: the agent build context holds exactly the rendered Dockerfile, the
// CA certificates under their context names, Claude Code and rtk from their checked files, with
// the modes the Dockerfile's COPY relies on; the build runs once, with the project's labels, on
// that context; an existing image is reused and --no-cache rebuilds it.
func TestAgentStagesAndBuilds(t *testing.T) {
	claude, rtk := []byte("#!/bin/sh\necho claude\n"), []byte("#!/bin/sh\necho rtk\n")
	cfg := config.Default()
	f := newFixture(t, cfg)
	caA, caB := testCert(t, "a"), testCert(t, "b")
	cfg.Image.CACertificates = []string{f.write("certs/corp root.pem", caA), "~/b.crt"}
	f.write("home/b.crt", caB)
	cfg.ClaudeCode = config.ClaudeCode{Source: config.SourceFile, Version: "2.1.0", Path: f.write("bin/claude", claude), SHA256: sha256Hex(claude)}
	cfg.RTK = config.RTK{Enabled: true, Version: "0.43.0", Source: config.SourceFile, Path: "~/rtk", SHA256: sha256Hex(rtk)}
	f.write("home/rtk", rtk)
	in, err := RenderInputs(context.Background(), cfg, f.b.Home, nil)
	if err != nil {
		t.Fatal(err)
	}
	dockerfile := f.render("", in.CACerts)
	if !strings.Contains(string(dockerfile), "COPY ca/ /usr/local/share/ca-certificates/abox/") ||
		!strings.Contains(string(dockerfile), `echo "`+sha256Hex(claude)+`  /usr/local/bin/claude" | sha256sum -c -`) {
		t.Fatalf("the rendered Dockerfile does not copy the CAs and check claude:\n%s", dockerfile)
	}

	f.fake.On("image inspect", noImage).Once()
	f.fake.On("build", docker.Result{Stdout: []byte("Step 1/2 : FROM base\nSuccessfully built 1\n")}).Once()
	if err := f.b.Agent(context.Background(), f.p, agentTag); err != nil {
		t.Fatalf("Agent = %v", err)
	}
	ctxDir := f.p.State.Build()
	want := map[string]string{
		"./":                  "drwx------",
		"Dockerfile":          "-rw-r--r-- " + string(dockerfile),
		"ca/":                 "drwx------",
		"ca/00-corp_root.crt": "-rw-r--r-- " + string(caA),
		"ca/01-b.crt":         "-rw-r--r-- " + string(caB),
		"claude":              "-rw-r--r-- " + string(claude),
		"rtk":                 "-rw-r--r-- " + string(rtk),
	}
	if diff := cmp.Diff(want, contextTree(t, ctxDir)); diff != "" {
		t.Errorf("staged context (-want +got):\n%s", diff)
	}
	wantArgv := [][]string{{"build", "--force-rm", "--tag", agentTag, "--label", "abox.managed=true", "--label", "abox.project=p", ctxDir}}
	if diff := cmp.Diff(wantArgv, f.builds()); diff != "" {
		t.Errorf("builds (-want +got):\n%s", diff)
	}
	for _, c := range f.fake.Calls() {
		if c.Args[0] == "build" && !slices.Contains(c.Env, "DOCKER_BUILDKIT=0") {
			t.Errorf("build env = %v, want the legacy builder", c.Env)
		}
	}
	if !strings.Contains(f.progress.String(), "building "+agentTag+" (the first build takes a few minutes)\n") {
		t.Errorf("progress = %q", f.progress)
	}

	// the image exists now: reused, nothing staged or built
	f.fake.On("image inspect", docker.Result{Stdout: []byte(`{"Id":"sha256:1"}`)})
	if err := f.b.Agent(context.Background(), f.p, agentTag); err != nil || len(f.builds()) != 1 {
		t.Errorf("Agent with the image present = %v, %d builds; want it reused", err, len(f.builds()))
	}
	// --no-cache rebuilds it without docker's cache
	f.b.NoCache = true
	f.fake.On("build", docker.Result{})
	if err := f.b.Agent(context.Background(), f.p, agentTag); err != nil {
		t.Fatalf("Agent --no-cache = %v", err)
	}
	if b := f.builds(); len(b) != 2 || !slices.Contains(b[1], "--no-cache") {
		t.Errorf("builds = %q, want a second one with --no-cache", b)
	}
}

// TestNetd: the netd context is the rendered netd Dockerfile and the running binary; an image
// already holding that binary (by label) is reused, any other is rebuilt with the label.
func TestNetd(t *testing.T) {
	f := newFixture(t, config.Default())
	f.render("", nil)
	bin := []byte("\x7fELF the abox binary")
	exe := f.write("bin/abox", bin)
	sum := sha256Hex(bin)
	const tag = "abox-netd:1"
	f.fake.On("image inspect", docker.Result{Stdout: []byte(`{"Id":"sha256:1","Config":{"Labels":{"abox.binary-sha256":"` + sum + `"}}}`)}).Once()
	if err := f.b.Netd(context.Background(), f.p, tag, exe, sum); err != nil || len(f.builds()) != 0 {
		t.Fatalf("Netd with the binary's image present = %v, %d builds", err, len(f.builds()))
	}
	f.fake.On("image inspect", docker.Result{Stdout: []byte(`{"Id":"sha256:1","Config":{"Labels":{"abox.binary-sha256":"old"}}}`)}).Once()
	f.fake.On("build", docker.Result{})
	if err := f.b.Netd(context.Background(), f.p, tag, exe, sum); err != nil {
		t.Fatalf("Netd = %v", err)
	}
	dir := filepath.Join(f.p.Paths.State, "build", "netd")
	netdDF, err := os.ReadFile(filepath.Join(f.p.State.Artifacts(), render.NetdDockerfile))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"./": "drwx------", "Dockerfile": "-rw-r--r-- " + string(netdDF), "abox": "-rw-r--r-- " + string(bin)}
	if diff := cmp.Diff(want, contextTree(t, dir)); diff != "" {
		t.Errorf("netd context (-want +got):\n%s", diff)
	}
	wantArgv := [][]string{{"build", "--force-rm", "--tag", tag, "--label", "abox.binary-sha256=" + sum, "--label", "abox.managed=true", dir}}
	if diff := cmp.Diff(wantArgv, f.builds()); diff != "" {
		t.Errorf("builds (-want +got):\n%s", diff)
	}
	if err := f.b.Netd(context.Background(), f.p, tag, exe, ""); err == nil || !strings.Contains(err.Error(), "cannot read the running abox binary "+exe) {
		t.Errorf("Netd without the binary's sum = %v", err)
	}
}

// TestBuildFails: a build docker fails is a *BuildError naming the image, holding the last 200
// lines of its log and the docker error; nothing else is built.
func TestBuildFails(t *testing.T) {
	claude := []byte("claude")
	cfg := config.Default()
	f := newFixture(t, cfg)
	cfg.ClaudeCode = config.ClaudeCode{Source: config.SourceFile, Version: "2.1.0", Path: f.write("claude", claude), SHA256: sha256Hex(claude)}
	f.render("", nil)
	var log strings.Builder
	for i := 1; i <= 300; i++ {
		fmt.Fprintf(&log, "line %d\n", i)
	}
	log.WriteString("E: Unable to locate package nope\n")
	f.fake.On("image inspect", noImage)
	f.fake.On("build", docker.Result{ExitCode: 100, Stdout: []byte(log.String())})
	err := f.b.Agent(context.Background(), f.p, agentTag)
	var be *BuildError
	var ee *docker.ExitError
	if !errors.As(err, &be) || !errors.As(err, &ee) || ee.Code != 100 || err.Error() != "building "+agentTag+" failed" {
		t.Fatalf("Agent = %v (%T), want a BuildError over docker's exit 100", err, err)
	}
	lines := strings.Split(strings.TrimSuffix(be.Log, "\n"), "\n")
	if be.Tag != agentTag || len(lines) != 200 || lines[0] != "line 102" || lines[199] != "E: Unable to locate package nope" {
		t.Errorf("BuildError %q: %d log lines from %q to %q, want the last 200", be.Tag, len(lines), lines[0], lines[len(lines)-1])
	}
	if len(f.builds()) != 1 {
		t.Errorf("%d builds, want 1", len(f.builds()))
	}
}

// TestInterrupted: an interruption leaves no half-written state. Cut during the build, the
// error is the interruption, not a build failure with a log; cut before staging completes, the
// previous context stays whole and no partial one is left beside it; a copy that fails does
// the same.
func TestInterrupted(t *testing.T) {
	claude := []byte("claude")
	cfg := config.Default()
	f := newFixture(t, cfg)
	cfg.ClaudeCode = config.ClaudeCode{Source: config.SourceFile, Version: "2.1.0", Path: f.write("claude", claude), SHA256: sha256Hex(claude)}
	f.render("", nil)
	build := f.p.State.Build()
	leftovers := func() []string {
		t.Helper()
		entries, err := os.ReadDir(filepath.Dir(build))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range entries {
			if strings.Contains(e.Name(), ".tmp-") {
				out = append(out, e.Name())
			}
		}
		return out
	}

	t.Run("during the build", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		f.fake.On("image inspect", noImage).Once()
		f.fake.OnFunc("build", func(docker.Invocation) (docker.Result, error) {
			cancel()
			return docker.Result{ExitCode: -1}, ctx.Err()
		}).Once()
		err := f.b.Agent(ctx, f.p, agentTag)
		var be *BuildError
		if !errors.Is(err, context.Canceled) || errors.As(err, &be) {
			t.Errorf("Agent interrupted = %v, want the interruption and no BuildError", err)
		}
		if got := contextTree(t, build); got["claude"] != "-rw-r--r-- claude" || got["Dockerfile"] == "" {
			t.Errorf("the context of the interrupted build is not whole: %v", got)
		}
	})
	previous := contextTree(t, build)

	t.Run("before staging", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		f.fake.OnFunc("image inspect", func(docker.Invocation) (docker.Result, error) {
			cancel() // Ctrl-C while docker answers: the next step must not start
			return noImage, nil
		}).Once()
		if err := f.b.Agent(ctx, f.p, agentTag); !errors.Is(err, context.Canceled) {
			t.Errorf("Agent = %v, want the interruption", err)
		}
		if diff := cmp.Diff(previous, contextTree(t, build)); diff != "" {
			t.Errorf("the previous context changed (-want +got):\n%s", diff)
		}
		if l := leftovers(); l != nil {
			t.Errorf("partial contexts left: %v", l)
		}
		if len(f.builds()) != 1 {
			t.Errorf("%d builds, want only the first", len(f.builds()))
		}
	})

	t.Run("a failing copy", func(t *testing.T) {
		files := map[string]string{"Dockerfile": filepath.Join(f.p.State.Artifacts(), render.AgentDockerfile), "zz-missing": filepath.Join(f.dir, "gone")}
		err := stage(context.Background(), build, files)
		if err == nil || !strings.Contains(err.Error(), "staging zz-missing: ") || !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("stage = %v", err)
		}
		if diff := cmp.Diff(previous, contextTree(t, build)); diff != "" {
			t.Errorf("the previous context changed (-want +got):\n%s", diff)
		}
		if l := leftovers(); l != nil {
			t.Errorf("partial contexts left: %v", l)
		}
	})
}
