package gateway

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/docker/dockertest"
)

const probeImage = "abox-netd:0123456789ab"

var notFound = docker.Result{ExitCode: 1, Stderr: []byte("Error: No such container: abox-gw-dev\n")}

func okJSON(s string) docker.Result { return docker.Result{Stdout: []byte(s)} }

func newManager(fake *dockertest.Fake) *Manager {
	return &Manager{Docker: docker.NewClient(fake, nil), Sleep: func(context.Context, time.Duration) error { return nil }}
}

// imagesPresent answers every image inspect: all images exist.
func imagesPresent(fake *dockertest.Fake) {
	fake.On("image inspect", okJSON(`{"Id":"sha256:1"}`))
}

func running(fingerprint string) docker.Result {
	return okJSON(fmt.Sprintf(`{"Id":"c1","State":{"Status":"running","Running":true},`+
		`"Config":{"Labels":{"abox.managed":"true","abox.role":"gateway","abox.fingerprint":%q}}}`, fingerprint))
}

const probeOK = `{"ok":true,"server":"stub 1","tools":[{"name":"get_issue","inputSchema":{"type":"object"}}],"auth":{"no_token":401,"wrong_token":401}}`

// probeOpen is a gateway that answers with the token and without it: docker/mcp-gateway before
// v0.43.1 in a container.
const probeOpen = `{"ok":true,"server":"stub 1","tools":[],"auth":{"no_token":200,"wrong_token":200}}`

// runRecorder answers `docker run --detach` and checks, at that moment, that the env file holds
// the token with mode 0600.
func runRecorder(t *testing.T, envFiles *[]string) func(docker.Invocation) (docker.Result, error) {
	return func(inv docker.Invocation) (docker.Result, error) {
		for i, a := range inv.Args {
			if a != "--env-file" {
				continue
			}
			path := inv.Args[i+1]
			*envFiles = append(*envFiles, path)
			st, err := os.Stat(path)
			if err != nil || st.Mode().Perm() != 0o600 {
				t.Errorf("env file %s: %v, mode %v; want 0600", path, err, st.Mode().Perm())
			}
			data, _ := os.ReadFile(path)
			if string(data) != TokenEnv+"="+testToken+"\n" {
				t.Errorf("env file holds %q", data)
			}
		}
		return okJSON("c0ffee\n"), nil
	}
}

func noToken(t *testing.T, fake *dockertest.Fake) {
	t.Helper()
	if strings.Contains(fake.ArgvText(), testToken) {
		t.Errorf("the token reached an argv:\n%s", fake.ArgvText())
	}
	for _, c := range fake.Calls() {
		if c.Stdin != nil && strings.Contains(strings.Join(c.Args, " "), "mcp-probe") && string(c.Stdin) != testToken+"\n" {
			t.Errorf("probe stdin = %q, want the token", c.Stdin)
		}
	}
}

func TestUpCreates(t *testing.T) {
	f := newFixture(t)
	p := f.plan(t)
	fake := dockertest.New(t)
	imagesPresent(fake)
	fake.On("container inspect --format {{json .}} abox-gw-dev", notFound)
	var envFiles []string
	fake.OnFunc("run --detach", runRecorder(t, &envFiles))
	fake.On("run --rm --interactive", okJSON(probeOK))
	out, err := newManager(fake).Up(context.Background(), p, UpOptions{Token: testToken, ProbeImage: probeImage})
	if err != nil {
		t.Fatal(err)
	}
	if out.Action != Created || !out.Probe.OK || len(out.Probe.ToolNames()) != 1 {
		t.Errorf("Up = %+v, want created and healthy", out)
	}
	if len(envFiles) != 1 {
		t.Fatalf("env files = %v", envFiles)
	}
	if _, err := os.Stat(envFiles[0]); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the env file %s survives docker run", envFiles[0])
	}
	if data, err := os.ReadFile(CatalogPath(f.dir)); err != nil || string(data) != string(p.Catalog) {
		t.Errorf("catalog file: %v", err)
	}
	if fp, ok, _ := LoadFingerprint(f.dir); !ok || fp.Sum() != p.Fingerprint.Sum() {
		t.Error("fingerprint.json not written")
	}
	noToken(t, fake)
}

func TestUpKeeps(t *testing.T) {
	f := newFixture(t)
	p := f.plan(t)
	fake := dockertest.New(t)
	imagesPresent(fake)
	fake.On("container inspect --format {{json .}} abox-gw-dev", running(p.Container.Fingerprint))
	fake.On("run --rm --interactive", okJSON(probeOK))
	out, err := newManager(fake).Up(context.Background(), p, UpOptions{Token: testToken, ProbeImage: probeImage})
	if err != nil || out.Action != Kept {
		t.Errorf("Up = %+v, %v, want kept", out, err)
	}
	for _, c := range fake.Calls() {
		if c.Args[0] == "stop" || c.Args[0] == "rm" || (c.Args[0] == "run" && c.Args[1] == "--detach") {
			t.Errorf("a kept gateway was touched: %v", c.Args)
		}
	}
}

func TestUpRecreates(t *testing.T) {
	tests := []struct {
		name      string
		inspect   func(p *Plan) docker.Result
		force     bool
		oldFP     bool
		wantWhy   string
		rotateTok bool
	}{
		{"forced", func(p *Plan) docker.Result { return running(p.Container.Fingerprint) }, true, false, "--force", false},
		{"stopped", func(*Plan) docker.Result {
			return okJSON(`{"State":{"Status":"exited"},"Config":{"Labels":{"abox.managed":"true","abox.role":"gateway"}}}`)
		}, false, false, "it was exited", false},
		{"token rotated", func(*Plan) docker.Result { return running("old") }, false, true, "changed token", true},
		{"unknown change", func(*Plan) docker.Result { return running("old") }, false, false, "its inputs changed", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			if tc.oldFP {
				old := f.plan(t).Fingerprint
				old.TokenSHA = TokenSHA256("previous")
				if err := old.Save(f.dir); err != nil {
					t.Fatal(err)
				}
			}
			p := f.plan(t)
			fake := dockertest.New(t)
			imagesPresent(fake)
			fake.On("container inspect --format {{json .}} abox-gw-dev", tc.inspect(p))
			fake.On("stop -t 10 abox-gw-dev", docker.Result{})
			fake.On("rm --force --volumes abox-gw-dev", docker.Result{})
			var envFiles []string
			fake.OnFunc("run --detach", runRecorder(t, &envFiles))
			out, err := newManager(fake).Up(context.Background(), p, UpOptions{Token: testToken, Force: tc.force})
			if err != nil {
				t.Fatal(err)
			}
			if out.Action != Recreated || strings.Join(out.Reasons, "; ") != tc.wantWhy {
				t.Errorf("Up = %+v, want recreated because %q", out, tc.wantWhy)
			}
			noToken(t, fake)
		})
	}
}

func TestUpRefusesForeignContainer(t *testing.T) {
	p := newFixture(t).plan(t)
	fake := dockertest.New(t)
	imagesPresent(fake)
	fake.On("container inspect", okJSON(`{"State":{"Running":true},"Config":{"Labels":{}}}`))
	_, err := newManager(fake).Up(context.Background(), p, UpOptions{Token: testToken})
	if err == nil || !strings.Contains(err.Error(), "abox did not create") {
		t.Errorf("Up = %v, want a refusal", err)
	}
}

func TestUpPullsMissingImages(t *testing.T) {
	p := newFixture(t).plan(t)
	fake := dockertest.New(t)
	missing := docker.Result{ExitCode: 1, Stderr: []byte("Error: No such image: x\n")}
	fake.On("image inspect --format {{json .}} mcp/time"+pin, missing).Once()
	fake.On("image inspect", okJSON(`{"Id":"sha256:1"}`))
	fake.On("pull --quiet mcp/time"+pin, docker.Result{ExitCode: 1, Stderr: []byte("Error response from daemon: Get \"https://registry-1.docker.io/v2/\": dial tcp: i/o timeout\n")})
	_, err := newManager(fake).Up(context.Background(), p, UpOptions{Token: testToken})
	if err == nil || !strings.Contains(err.Error(), "pulling the image of server time") {
		t.Fatalf("Up = %v, want a pull error naming the server", err)
	}
	for _, c := range fake.Calls() {
		if c.Args[0] == "run" || c.Args[0] == "container" {
			t.Errorf("went on after a failed pull: %v", c.Args)
		}
	}
}

func TestUpNeverPullsLocalImages(t *testing.T) {
	p := newFixture(t).plan(t)
	fake := dockertest.New(t)
	fake.On("image inspect --format {{json .}} "+localImage('a'), docker.Result{ExitCode: 1, Stderr: []byte("Error: No such image: x\n")})
	fake.On("image inspect", okJSON(`{"Id":"sha256:1"}`))
	_, err := newManager(fake).Up(context.Background(), p, UpOptions{Token: testToken})
	var missing *ImageMissingError
	if !errors.As(err, &missing) || missing.Ref != localImage('a') {
		t.Fatalf("Up = %v, want ImageMissingError for the pin: false image", err)
	}
	for _, c := range fake.Calls() {
		if c.Args[0] == "pull" {
			t.Errorf("pulled %v", c.Args)
		}
	}
}

func TestUpProbeRetriesThenFails(t *testing.T) {
	p := newFixture(t).plan(t)
	fake := dockertest.New(t)
	imagesPresent(fake)
	fake.On("container inspect", running(p.Container.Fingerprint))
	fake.On("run --rm --interactive", okJSON(`{"ok":false,"error":"initialize: connection refused","tools":[]}`))
	m := newManager(fake)
	var slept int
	m.Sleep = func(context.Context, time.Duration) error { slept++; return nil }
	_, err := m.Up(context.Background(), p, UpOptions{Token: testToken, ProbeImage: probeImage})
	var ue *UnhealthyError
	if !errors.As(err, &ue) || ue.Unauthorized || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("Up = %v, want unhealthy", err)
	}
	if slept != len(probeDelays) {
		t.Errorf("slept %d times, want %d", slept, len(probeDelays))
	}
	noToken(t, fake)
}

func TestUpProbeUnauthorizedFailsAtOnce(t *testing.T) {
	p := newFixture(t).plan(t)
	fake := dockertest.New(t)
	imagesPresent(fake)
	fake.On("container inspect", running(p.Container.Fingerprint))
	fake.On("run --rm --interactive", docker.Result{ExitCode: 1,
		Stdout: []byte(`{"ok":false,"status":401,"error":"initialize: the gateway refused the token (HTTP 401)","tools":[]}`)})
	_, err := newManager(fake).Up(context.Background(), p, UpOptions{Token: testToken, ProbeImage: probeImage})
	var ue *UnhealthyError
	if !errors.As(err, &ue) || !ue.Unauthorized {
		t.Fatalf("Up = %v, want unauthorized", err)
	}
	if n := strings.Count(fake.ArgvText(), "mcp-probe"); n != 1 {
		t.Errorf("probed %d times, want once", n)
	}
}

func TestUpProbeSucceedsAfterStart(t *testing.T) {
	p := newFixture(t).plan(t)
	fake := dockertest.New(t)
	imagesPresent(fake)
	fake.On("container inspect", running(p.Container.Fingerprint))
	fake.On("run --rm --interactive", okJSON(`{"ok":false,"error":"starting","tools":[]}`)).Once()
	fake.On("run --rm --interactive", okJSON(probeOK))
	out, err := newManager(fake).Up(context.Background(), p, UpOptions{Token: testToken, ProbeImage: probeImage})
	if err != nil || !out.Probe.OK {
		t.Fatalf("Up = %+v, %v", out, err)
	}
}

func TestDown(t *testing.T) {
	fake := dockertest.New(t)
	fake.On("container inspect", running("x")).Once()
	fake.On("stop -t 10 abox-gw-dev", docker.Result{})
	fake.On("rm --force --volumes abox-gw-dev", docker.Result{})
	fake.On("container inspect", notFound)
	m := newManager(fake)
	if removed, err := m.Down(context.Background(), "dev"); !removed || err != nil {
		t.Errorf("Down = %v, %v", removed, err)
	}
	if removed, err := m.Down(context.Background(), "dev"); removed || err != nil {
		t.Errorf("Down of nothing = %v, %v", removed, err)
	}
}

func TestRedact(t *testing.T) {
	in := "token " + testToken + " and authorization: Bearer abc.def-ghi and BEARER xyz\n\x1b]0;pwned\x07\u009b2J\tend"
	got := Redact(in, testToken)
	if strings.Contains(got, testToken) || strings.Contains(got, "abc.def") || strings.Contains(got, "xyz") {
		t.Errorf("Redact = %q", got)
	}
	if strings.ContainsAny(got, "\x1b\x07\u009b") || !strings.Contains(got, "\n") || !strings.Contains(got, "\tend") {
		t.Errorf("Redact = %q, want control characters but newline and tab replaced", got)
	}
}

func TestScrubErr(t *testing.T) {
	err := scrubErr(fmt.Errorf("wrapped: %w", errors.New("x "+testToken)), testToken)
	if strings.Contains(err.Error(), testToken) {
		t.Errorf("scrubErr = %q", err)
	}
}

// TestUpWritesSecrets: the plan's secrets file is written 0600 and mounted read-only; a plan
// without secrets removes it and mounts nothing. The value never reaches an argv.
func TestUpWritesSecrets(t *testing.T) {
	const value = "fake-secret-value-for-the-gateway"
	f := newFixture(t)
	in := PlanInput{Profile: "dev", Dir: f.dir, Config: f.cfg, Registry: f.reg, Catalog: f.cat, Custom: f.custom, Token: testToken,
		Secrets: Secrets{Data: SecretData("docs.token=" + value + "\n"), Digest: "pbkdf2-sha256$1$aa"}}
	p, err := NewPlan(in)
	if err != nil {
		t.Fatal(err)
	}
	fake := dockertest.New(t)
	imagesPresent(fake)
	fake.On("container inspect --format {{json .}} abox-gw-dev", notFound)
	fake.On("run --detach", okJSON("c0ffee\n"))
	if _, err := newManager(fake).Up(context.Background(), p, UpOptions{Token: testToken}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(f.dir, SecretsFile)
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("secrets file: %v, mode %v; want 0600", err, st)
	}
	if !strings.Contains(fake.ArgvText(), "source="+path+",target=/run/secrets/abox-dev.env,readonly") {
		t.Errorf("the secrets file is not mounted read-only:\n%s", fake.ArgvText())
	}
	if strings.Contains(fake.ArgvText(), value) {
		t.Error("a secret value reached an argv")
	}
	if s := fmt.Sprintf("%v %+v %s %q %x", p, p.Secrets, p.Secrets.Data, p.Secrets.Data, p.Secrets.Data); strings.Contains(s, value) ||
		strings.Contains(s, fmt.Sprintf("%x", value)) {
		t.Error("printing the plan shows the secret value")
	}

	in.Secrets = Secrets{}
	p, _ = NewPlan(in)
	fake2 := dockertest.New(t)
	imagesPresent(fake2)
	fake2.On("container inspect --format {{json .}} abox-gw-dev", running("old"))
	fake2.On("stop", docker.Result{})
	fake2.On("rm", docker.Result{})
	fake2.On("run --detach", okJSON("c0ffee\n"))
	if _, err := newManager(fake2).Up(context.Background(), p, UpOptions{Token: testToken}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the secrets file survives a plan without secrets: %v", err)
	}
	if strings.Contains(fake2.ArgvText(), "target=/run/secrets") {
		t.Error("a secrets file is mounted though none is needed")
	}
}

// TestLogsTailRedactsSecrets: what abox shows of the gateway's log holds neither the token nor
// a value of the profile's secrets file.
func TestLogsTailRedactsSecrets(t *testing.T) {
	f := newFixture(t)
	write(t, filepath.Join(f.dir, SecretsFile), "# header\ndocs.token=fake-docs-value-77\nshort.one=abc\n")
	fake := dockertest.New(t)
	fake.On("logs --tail 40 abox-gw-dev", docker.Result{Stdout: []byte("server docs: env DOCS_TOKEN=fake-docs-value-77\n" +
		"auth " + testToken + "\nabc stays\n")})
	m := newManager(fake)
	m.GatewaysDir = filepath.Dir(f.dir)
	got := m.LogsTail(context.Background(), "dev", testToken, 40)
	if strings.Contains(got, "fake-docs-value-77") || strings.Contains(got, testToken) {
		t.Errorf("LogsTail = %q", got)
	}
	if !strings.Contains(got, "DOCS_TOKEN=«redacted»") || !strings.Contains(got, "abc stays") {
		t.Errorf("LogsTail = %q, want the value redacted and short values left alone", got)
	}
}

// TestUpRefusesAnOpenGateway: a gateway that answers MCP without its token, or with a wrong
// one, is an OpenError at once (no retries) and leaves no proof behind; one that refuses both is
// recorded for its container, so that `abox run` need not probe it again.
func TestUpRefusesAnOpenGateway(t *testing.T) {
	for _, tc := range []struct {
		name, probe string
		open        bool
	}{
		{"open", probeOpen, true},
		{"wrong token accepted", `{"ok":true,"tools":[],"auth":{"no_token":401,"wrong_token":200}}`, true},
		{"no answer without the token", `{"ok":true,"tools":[],"auth":{"no_token":0,"wrong_token":401,"error":"reset"}}`, true},
		{"no auth check at all", `{"ok":true,"tools":[]}`, true},
		{"forbidden counts as refused", `{"ok":true,"tools":[],"auth":{"no_token":403,"wrong_token":401}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			p := f.plan(t)
			fake := dockertest.New(t)
			imagesPresent(fake)
			fake.On("container inspect --format {{json .}} abox-gw-dev", running(p.Container.Fingerprint))
			fake.On("run --rm --interactive", okJSON(tc.probe)).Once()
			_, err := newManager(fake).Up(context.Background(), p, UpOptions{Token: testToken, ProbeImage: probeImage})
			var open *OpenError
			if errors.As(err, &open) != tc.open || (!tc.open && err != nil) {
				t.Fatalf("Up = %v, want an OpenError: %v", err, tc.open)
			}
			ct := &docker.Container{ID: "c1"}
			if AuthProven(f.dir, ct) == tc.open {
				t.Errorf("AuthProven = %v after an Up whose gateway is open: %v", !tc.open, tc.open)
			}
			if tc.open && !strings.Contains(err.Error(), "the dev gateway does not enforce its token: ") {
				t.Errorf("error %q", err)
			}
		})
	}
}

func TestAuthProofIsPerContainer(t *testing.T) {
	dir := t.TempDir()
	ct := &docker.Container{ID: "c1", Image: "sha256:1"}
	if err := SaveAuthProof(dir, ct, &AuthCheck{NoToken: 200, WrongToken: 401}, time.Now()); err == nil {
		t.Error("SaveAuthProof recorded an open gateway")
	}
	if err := SaveAuthProof(dir, ct, &AuthCheck{NoToken: 401, WrongToken: 401}, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ct   *docker.Container
		want bool
	}{
		{ct, true}, {&docker.Container{ID: "c2", Image: "sha256:1"}, false}, {&docker.Container{ID: "c1", Image: "sha256:2"}, false}, {nil, false},
	} {
		if got := AuthProven(dir, tc.ct); got != tc.want {
			t.Errorf("AuthProven(%+v) = %v, want %v", tc.ct, got, tc.want)
		}
	}
	if st, err := os.Stat(filepath.Join(dir, AuthProofFile)); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("auth.json: %v, mode %v", err, st.Mode().Perm())
	}
}
