package images

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/render"
)

// fakeProbe answers NPMRegistry with registry and err, and records the calls.
type fakeProbe struct {
	registry string
	err      error
	calls    int
	deadline time.Duration // how long the call was given
}

func (p *fakeProbe) NPMRegistry(ctx context.Context) (string, error) {
	p.calls++
	if d, ok := ctx.Deadline(); ok {
		p.deadline = time.Until(d)
	}
	return p.registry, p.err
}

// TestNPMRegistryFromProbe: for Claude Code from npm, the registry the rendered Dockerfile
// installs from is the one the host's npm reports (trimmed), asked with a deadline; without
// npm, npm's default; other sources do not ask at all. The staged Dockerfile is the rendered one.
func TestNPMRegistryFromProbe(t *testing.T) {
	const mirror = "https://npm.mirror.test/repository/npm/"
	npm := func() *config.Config {
		cfg := config.Default()
		cfg.ClaudeCode = config.ClaudeCode{Source: config.SourceNPM, Version: "2.1.0"}
		return cfg
	}
	cases := []struct {
		name  string
		cfg   *config.Config
		probe *fakeProbe
		want  string
		calls int
	}{
		{"host npm's registry", npm(), &fakeProbe{registry: " " + mirror + "\n"}, mirror, 1},
		{"no npm on the host", npm(), &fakeProbe{registry: "ignored", err: errors.New("exec: \"npm\": executable file not found in $PATH")}, "", 1},
		{"native source", config.Default(), &fakeProbe{registry: mirror}, "", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in, err := RenderInputs(context.Background(), tc.cfg, t.TempDir(), tc.probe)
			if err != nil || in.NPMRegistry != tc.want || tc.probe.calls != tc.calls {
				t.Fatalf("RenderInputs = %+v, %v after %d probes; want registry %q after %d", in, err, tc.probe.calls, tc.want, tc.calls)
			}
			if tc.calls > 0 && (tc.probe.deadline <= 0 || tc.probe.deadline > probeTimeout) {
				t.Errorf("the probe was given %v, want a deadline of at most %v", tc.probe.deadline, probeTimeout)
			}
		})
	}

	f := newFixture(t, npm())
	in, err := RenderInputs(context.Background(), f.p.Config, f.b.Home, &fakeProbe{registry: mirror + "\n"})
	if err != nil {
		t.Fatal(err)
	}
	dockerfile := f.render(in.NPMRegistry, in.CACerts)
	if !strings.Contains(string(dockerfile), `npm install --global --no-fund --no-audit --registry "`+mirror+`" "@anthropic-ai/claude-code@2.1.0"`) {
		t.Fatalf("the rendered Dockerfile does not install from the host's registry:\n%s", dockerfile)
	}
	f.fake.On("image inspect", noImage)
	f.fake.On("build", docker.Result{})
	if err := f.b.Agent(context.Background(), f.p, agentTag); err != nil {
		t.Fatalf("Agent = %v", err)
	}
	want := map[string]string{"./": "drwx------", "Dockerfile": "-rw-r--r-- " + string(dockerfile)}
	if diff := cmp.Diff(want, contextTree(t, f.p.State.Build())); diff != "" {
		t.Errorf("staged context (-want +got):\n%s", diff)
	}
}

// TestFileSourceChecked: a Claude Code or rtk file whose sha256 is not the configured one, or
// with no sha256 configured, is refused before anything is staged or built; a missing file
// names the setting to fix.
func TestFileSourceChecked(t *testing.T) {
	claude := []byte("claude")
	other := sha256Hex([]byte("other"))
	cases := []struct {
		name      string
		set       func(f *fixture, cfg *config.Config)
		refused   bool
		msg, hint string
	}{
		{"claude sha256 differs", func(f *fixture, cfg *config.Config) {
			cfg.ClaudeCode = config.ClaudeCode{Source: config.SourceFile, Path: f.write("claude", claude), SHA256: other}
		}, true, "claude has sha256 " + sha256Hex(claude) + ", but claude_code.sha256 is " + other, "update claude_code.sha256 in config.yaml only if you trust this file"},
		{"claude sha256 missing", func(f *fixture, cfg *config.Config) {
			cfg.ClaudeCode = config.ClaudeCode{Source: config.SourceFile, Path: f.write("claude", claude)}
		}, true, "claude_code.sha256 is not set", "set claude_code.sha256 in config.yaml to the sha256 of a file you trust"},
		{"claude file missing", func(f *fixture, cfg *config.Config) {
			cfg.ClaudeCode = config.ClaudeCode{Source: config.SourceFile, Path: "~/nowhere", SHA256: other}
		}, false, "/home/nowhere: open ", "set claude_code.path in config.yaml to an existing file"},
		{"rtk sha256 differs", func(f *fixture, cfg *config.Config) {
			cfg.ClaudeCode = config.ClaudeCode{Source: config.SourceFile, Path: f.write("claude", claude), SHA256: sha256Hex(claude)}
			cfg.RTK = config.RTK{Enabled: true, Source: config.SourceFile, Path: f.write("rtk", []byte("rtk")), SHA256: other}
		}, true, "but rtk.sha256 is " + other, "update rtk.sha256"},
		{"CA certificate missing", func(f *fixture, cfg *config.Config) {
			cfg.Image.CACertificates = []string{filepath.Join(f.dir, "no.crt")}
		}, false, "/no.crt: open ", "fix image.ca_certificates in config.yaml"},
		{"CA certificate not PEM", func(f *fixture, cfg *config.Config) {
			cfg.Image.CACertificates = []string{f.write("key.pem", []byte("-----BEGIN PRIVATE KEY-----\n"))}
		}, false, "key.pem is not a PEM certificate", "list PEM certificate files only"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			f := newFixture(t, cfg)
			tc.set(f, cfg)
			f.render("", nil) // so that nothing but the check stands between the file and a build
			f.fake.On("image inspect", noImage)
			f.fake.On("build", docker.Result{}).Optional()
			err := f.b.Agent(context.Background(), f.p, agentTag)
			var ie *Error
			if !errors.As(err, &ie) || ie.Refused != tc.refused || !strings.Contains(err.Error(), tc.msg) || !strings.Contains(ie.HintText(), tc.hint) {
				t.Errorf("Agent = %v (refused %v, hint %q), want refused %v with %q and hint %q", err, ie != nil && ie.Refused, hintOf(err), tc.refused, tc.msg, tc.hint)
			}
			if len(f.builds()) != 0 {
				t.Error("an image was built")
			}
			if _, err := os.Stat(f.p.State.Build()); err == nil {
				t.Error("a build context was staged")
			}
		})
	}
}

// TestCACertNames: context names keep the order and a sanitised base name; RenderInputs names
// and hashes them as the context holds them.
func TestCACertNames(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for _, name := range []string{"Corp Root (2026).pem", "x.y.crt"} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, testCert(t, name), 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, path)
	}
	cfg := config.Default()
	cfg.Image.CACertificates = files
	in, err := RenderInputs(context.Background(), cfg, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []render.File{
		{Name: "00-Corp_Root__2026_.crt", SHA256: render.SHA256(testCert(t, "Corp Root (2026).pem"))},
		{Name: "01-x.y.crt", SHA256: render.SHA256(testCert(t, "x.y.crt"))},
	}
	if diff := cmp.Diff(want, in.CACerts); diff != "" {
		t.Errorf("CACerts (-want +got):\n%s", diff)
	}
}
