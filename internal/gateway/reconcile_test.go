package gateway

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/catalog"
	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/docker/dockertest"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/paths"
)

// reconcileEnv is an Env over a temporary config and state, the fake docker CLI and the
// catalog of scopeCatalog, with profile dev's token set to testToken. It records warnings.
type reconcileEnv struct {
	*Env
	fake     *dockertest.Fake
	warnings []Warning
}

func newReconcileEnv(t *testing.T) *reconcileEnv {
	t.Helper()
	root := t.TempDir()
	ps := paths.Paths{Config: filepath.Join(root, "config"), State: filepath.Join(root, "state")}
	write(t, filepath.Join(root, "mcp", "catalogs", "docker-mcp.yaml"), scopeCatalog)
	write(t, filepath.Join(ps.Gateway("dev"), TokenFile), testToken+"\n")
	cfg := config.Default()
	cfg.Gateway.Image = gwImage
	cfg.Profiles["dev"] = config.Profile{Port: 8812}
	e := &reconcileEnv{fake: dockertest.New(t)}
	no := false
	e.Env = &Env{Docker: docker.NewClient(e.fake, nil), Paths: ps, Config: cfg, MCPHome: filepath.Join(root, "mcp"),
		Custom:  config.CustomServers{"memo": {Image: localImage('a'), Pin: &no, Tools: []string{"memo_add"}}},
		Secrets: func(context.Context, *Union, *catalog.Catalog) (Secrets, error) { return Secrets{}, nil },
		Sleep:   func(context.Context, time.Duration) error { return nil },
		Warn:    func(w Warning) { e.warnings = append(e.warnings, w) }}
	return e
}

// bind binds m to profile dev as the project hash.
func (e *reconcileEnv) bind(t *testing.T, hash string, m *manifest.Manifest) {
	t.Helper()
	m.Profile = "dev"
	if _, err := BindProject(e.Paths.GatewaysDir(), "/src/"+m.Project, hash, m, e.Custom); err != nil {
		t.Fatal(err)
	}
}

// upReplies answers what a first start of the gateway asks: the network and images exist, no
// container yet, then a running one.
func (e *reconcileEnv) upReplies(t *testing.T) {
	e.fake.On("network inspect", okJSON(`{"Name":"abox-net","Id":"n1","Driver":"bridge"}`))
	imagesPresent(e.fake)
	e.fake.On("container inspect --format {{json .}} abox-gw-dev", notFound).Once()
	e.fake.On("container inspect --format {{json .}} abox-gw-dev", running("any")).Optional() // after a healthy probe
}

// noCalls fails when the refusal reached docker at all.
func (e *reconcileEnv) noCalls(t *testing.T) {
	t.Helper()
	if calls := e.fake.Calls(); len(calls) > 0 {
		t.Errorf("a refused reconciliation ran docker: %v", calls)
	}
}

// locked reports whether the profile's lock is held, by trying to take it without waiting.
func locked(t *testing.T, dir string) bool {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return errors.Is(err, syscall.EWOULDBLOCK)
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}

// TestReconcileStarts: a profile with one project is planned, its network ensured, the gateway
// created under the profile's lock with the token in no argv, and probed from the preferred
// netd image.
func TestReconcileStarts(t *testing.T) {
	e := newReconcileEnv(t)
	e.bind(t, "a00000000000", &manifest.Manifest{Project: "alpha", Servers: []string{"fetch"}})
	e.upReplies(t)
	var envFiles []string
	record := runRecorder(t, &envFiles)
	heldAtCreate := false
	e.fake.OnFunc("run --detach", func(inv docker.Invocation) (docker.Result, error) {
		heldAtCreate = locked(t, e.Paths.Gateway("dev"))
		return record(inv)
	})
	e.fake.On("run --rm --interactive", okJSON(probeOK))
	res, err := Reconcile(context.Background(), e.Env, "dev", ReconcileOptions{Prefer: probeImage})
	if err != nil {
		t.Fatal(err)
	}
	if res.Removed || res.Outcome.Action != Created || res.Outcome.Probe == nil || !res.Outcome.Probe.OK {
		t.Errorf("Reconcile = %+v, want created and probed healthy", res)
	}
	if !heldAtCreate {
		t.Error("the gateway was created without the profile's lock held")
	}
	if locked(t, e.Paths.Gateway("dev")) {
		t.Error("the profile's lock is still held after Reconcile returned")
	}
	if len(envFiles) != 1 {
		t.Errorf("docker run --detach ran with env files %v, want one", envFiles)
	}
	probed := false
	for _, c := range e.fake.Calls() {
		if c.Args[0] == "run" && c.Args[1] == "--rm" && strings.Contains(strings.Join(c.Args, " "), probeImage) {
			probed = true
		}
	}
	if !probed {
		t.Errorf("no probe ran in %s: %v", probeImage, e.fake.Calls())
	}
	if len(e.warnings) != 0 {
		t.Errorf("warnings = %+v, want none", e.warnings)
	}
	noToken(t, e.fake)
}

// TestReconcileWaitsForTheLock: another holder of the profile's lock (a bind, another
// reconciliation) keeps Reconcile from planning or touching docker until it lets go.
func TestReconcileWaitsForTheLock(t *testing.T) {
	e := newReconcileEnv(t)
	e.bind(t, "a00000000000", &manifest.Manifest{Project: "alpha", Servers: []string{"fetch"}})
	e.upReplies(t)
	e.fake.On("run --detach", okJSON("c0ffee\n"))
	e.fake.On("run --rm --interactive", okJSON(probeOK))
	unlock, err := LockProfile(e.Paths.Gateway("dev"))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := Reconcile(context.Background(), e.Env, "dev", ReconcileOptions{Prefer: probeImage})
		done <- err
	}()
	select {
	case err := <-done:
		unlock()
		t.Fatalf("Reconcile returned (%v) while another holder had the lock", err)
	case <-time.After(200 * time.Millisecond):
	}
	if calls := e.fake.Calls(); len(calls) > 0 {
		t.Errorf("docker ran while another holder had the lock: %v", calls)
	}
	unlock()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestReconcileRefusesLeak: gamma's notes has no known tool list, so its netd passes any name;
// beside alpha's fetch the gateway would hand gamma's agent fetch. Nothing starts.
func TestReconcileRefusesLeak(t *testing.T) {
	e := newReconcileEnv(t)
	e.bind(t, "a00000000000", &manifest.Manifest{Project: "gamma", Servers: []string{"notes"}})
	e.bind(t, "b00000000000", &manifest.Manifest{Project: "alpha", Servers: []string{"fetch"}})
	_, err := Reconcile(context.Background(), e.Env, "dev", ReconcileOptions{Prefer: probeImage})
	var le *LeakError
	if !errors.As(err, &le) {
		t.Fatalf("Reconcile = %v, want a *LeakError", err)
	}
	if len(le.Leaks) != 1 || le.Leaks[0].Project != "gamma" || strings.Join(le.Leaks[0].Foreign, ",") != "fetch" {
		t.Errorf("leaks = %+v, want gamma reaching fetch", le.Leaks)
	}
	want := "the dev gateway would give a project other projects' tools:\n- project gamma declares notes, whose tools nobody lists, " +
		"so its netd lets any tool name through; the gateway also serves fetch of alpha"
	if err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	e.noCalls(t)
}

// TestReconcileRefusesMissingSecrets: a server's secret the store does not hold would reach it
// as <UNKNOWN>; nothing starts.
func TestReconcileRefusesMissingSecrets(t *testing.T) {
	e := newReconcileEnv(t)
	e.bind(t, "a00000000000", &manifest.Manifest{Project: "alpha", Servers: []string{"fetch"}})
	e.Secrets = func(context.Context, *Union, *catalog.Catalog) (Secrets, error) {
		return Secrets{Missing: []string{"fetch.api_key (server fetch of alpha)"}}, nil
	}
	_, err := Reconcile(context.Background(), e.Env, "dev", ReconcileOptions{Prefer: probeImage})
	var se *SecretsError
	if !errors.As(err, &se) || se.Secret() != "fetch.api_key" || !strings.Contains(err.Error(), "<UNKNOWN>:\n- fetch.api_key (server fetch of alpha)") {
		t.Fatalf("Reconcile = %v, want a *SecretsError naming fetch.api_key", err)
	}
	e.noCalls(t)
}

// TestReconcileWithoutSecrets: an Env that cannot render the secrets file plans nothing,
// rather than start a gateway that hands its servers <UNKNOWN>.
func TestReconcileWithoutSecrets(t *testing.T) {
	e := newReconcileEnv(t)
	e.bind(t, "a00000000000", &manifest.Manifest{Project: "alpha", Servers: []string{"fetch"}})
	e.Secrets = nil
	if _, err := Reconcile(context.Background(), e.Env, "dev", ReconcileOptions{}); err == nil {
		t.Fatal("Reconcile without Env.Secrets succeeded")
	}
	e.noCalls(t)
}

// TestReconcileProbeFails: a gateway that refuses its own token is an *UpError around an
// *UnhealthyError, with the gateway's log, the token removed.
func TestReconcileProbeFails(t *testing.T) {
	e := newReconcileEnv(t)
	e.bind(t, "a00000000000", &manifest.Manifest{Project: "alpha", Servers: []string{"fetch"}})
	e.upReplies(t)
	e.fake.On("run --detach", okJSON("c0ffee\n"))
	e.fake.On("run --rm --interactive", okJSON(`{"ok":false,"status":401,"error":"initialize: 401 Unauthorized","tools":[]}`))
	e.fake.On("logs --tail 40 abox-gw-dev", docker.Result{Stderr: []byte("rejected bearer " + testToken + "\n")})
	res, err := Reconcile(context.Background(), e.Env, "dev", ReconcileOptions{Prefer: probeImage})
	var up *UpError
	var ue *UnhealthyError
	if !errors.As(err, &up) || !errors.As(err, &ue) || !ue.Unauthorized {
		t.Fatalf("Reconcile = %v, want an *UpError around an unauthorized *UnhealthyError", err)
	}
	if !strings.Contains(up.Log, "rejected bearer") || strings.Contains(up.Log, testToken) {
		t.Errorf("log = %q, want the gateway's line without the token", up.Log)
	}
	if res == nil || res.Outcome == nil || res.Outcome.Action != Created {
		t.Errorf("result = %+v, want the created gateway reported", res)
	}
	noToken(t, e.fake)
}

// TestReconcileOpenGateway: a gateway that answers without its token is refused as open.
func TestReconcileOpenGateway(t *testing.T) {
	e := newReconcileEnv(t)
	e.bind(t, "a00000000000", &manifest.Manifest{Project: "alpha", Servers: []string{"fetch"}})
	e.upReplies(t)
	e.fake.On("run --detach", okJSON("c0ffee\n"))
	e.fake.On("run --rm --interactive", okJSON(probeOpen))
	_, err := Reconcile(context.Background(), e.Env, "dev", ReconcileOptions{Prefer: probeImage})
	var open *OpenError
	if !errors.As(err, &open) {
		t.Fatalf("Reconcile = %v, want an *OpenError", err)
	}
}

// TestReconcileUnprobed: without a netd image to probe from, the gateway starts unprobed, and
// Reconcile says so.
func TestReconcileUnprobed(t *testing.T) {
	e := newReconcileEnv(t)
	e.bind(t, "a00000000000", &manifest.Manifest{Project: "alpha", Servers: []string{"fetch"}})
	e.fake.On("network inspect", okJSON(`{"Name":"abox-net","Id":"n1","Driver":"bridge"}`))
	e.fake.On("image inspect --format {{json .}} "+probeImage, docker.Result{ExitCode: 1, Stderr: []byte("Error: No such image: " + probeImage + "\n")})
	imagesPresent(e.fake)
	e.fake.On("container inspect --format {{json .}} abox-gw-dev", notFound)
	e.fake.On("run --detach", okJSON("c0ffee\n"))
	res, err := Reconcile(context.Background(), e.Env, "dev", ReconcileOptions{Prefer: probeImage})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome.Probe != nil {
		t.Errorf("probe = %+v, want none", res.Outcome.Probe)
	}
	if len(e.warnings) != 1 || e.warnings[0].Finding != nil || !strings.Contains(e.warnings[0].Message, "will not be probed") {
		t.Errorf("warnings = %+v, want the unprobed gateway", e.warnings)
	}
}

// TestReconcilePlanErrors: an unknown server is refused with its finding's kind; a local image
// is only a warning.
func TestReconcilePlanErrors(t *testing.T) {
	e := newReconcileEnv(t)
	e.bind(t, "a00000000000", &manifest.Manifest{Project: "alpha", Servers: []string{"memo", "nosuch"}})
	_, err := Reconcile(context.Background(), e.Env, "dev", ReconcileOptions{})
	var pe *PlanError
	if !errors.As(err, &pe) || pe.Kind != catalog.Unknown || !strings.HasPrefix(err.Error(), "the dev gateway cannot start:\n- ") ||
		!strings.Contains(err.Error(), "nosuch") {
		t.Fatalf("Reconcile = %v, want a *PlanError for nosuch", err)
	}
	if len(e.warnings) != 1 || e.warnings[0].Finding == nil || e.warnings[0].Finding.Kind != catalog.LocalImage {
		t.Errorf("warnings = %+v, want memo's local image", e.warnings)
	}
	e.noCalls(t)
}

// TestReconcileUnused: a profile no project declares a server on has its gateway removed, and
// without one there is nothing to do.
func TestReconcileUnused(t *testing.T) {
	e := newReconcileEnv(t)
	e.bind(t, "a00000000000", &manifest.Manifest{Project: "alpha"})
	e.fake.On("container inspect --format {{json .}} abox-gw-dev", running("any")).Once()
	e.fake.On("stop -t 10 abox-gw-dev", docker.Result{})
	e.fake.On("rm --force --volumes abox-gw-dev", docker.Result{})
	e.fake.On("container inspect --format {{json .}} abox-gw-dev", notFound)
	res, err := Reconcile(context.Background(), e.Env, "dev", ReconcileOptions{})
	if err != nil || !res.Removed {
		t.Fatalf("Reconcile = %+v, %v, want the gateway removed", res, err)
	}
	_, err = Reconcile(context.Background(), e.Env, "dev", ReconcileOptions{})
	var ue *UnusedError
	if !errors.As(err, &ue) || err.Error() != "no project on profile dev declares an MCP server" {
		t.Errorf("Reconcile again = %v, want an *UnusedError", err)
	}
}

// TestReconcileUnknownProfile: a profile config.yaml does not define is refused before the lock
// creates its directory's files, naming the profiles it does define.
func TestReconcileUnknownProfile(t *testing.T) {
	e := newReconcileEnv(t)
	_, err := Reconcile(context.Background(), e.Env, "nosuch", ReconcileOptions{})
	var up *UnknownProfileError
	if !errors.As(err, &up) || !errors.Is(err, ErrNoProfile) || strings.Join(up.Known, ",") != "default,dev" {
		t.Fatalf("Reconcile = %v, want an *UnknownProfileError listing default and dev", err)
	}
	if _, err := os.Stat(e.Paths.Gateway("nosuch")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the unknown profile got a state directory: %v", err)
	}
	e.noCalls(t)
}

// TestProfileStatus: a missing gateway, a running healthy one with its tools, and one that
// does not enforce its token, which is reported open.
func TestProfileStatus(t *testing.T) {
	ctx := context.Background()
	e := newReconcileEnv(t)
	e.bind(t, "a00000000000", &manifest.Manifest{Project: "alpha", Servers: []string{"fetch"}})
	e.fake.On("container inspect --format {{json .}} abox-gw-dev", notFound).Once()
	st, err := ProfileStatus(ctx, e.Env, "dev", true)
	if err != nil || st.State != "missing" || st.Health != "" || strings.Join(st.Projects, ",") != "alpha" || st.URL != "http://abox-gw-dev:8812/mcp" {
		t.Errorf("missing gateway: %+v, %v", st, err)
	}

	// the probe runs in the netd image alpha's runspec.json names
	rs := filepath.Join(e.Paths.Project("/src/alpha").Artifacts(), "runspec.json")
	write(t, rs, `{"netd":{"image":"`+probeImage+`"}}`)
	e.fake.On("container inspect --format {{json .}} abox-gw-dev", okJSON(`{"Id":"c1","Args":["--servers=fetch"],`+
		`"State":{"Status":"running","Running":true},"Config":{"Image":"gw","Labels":{"abox.managed":"true","abox.role":"gateway","abox.fingerprint":"old"}}}`))
	imagesPresent(e.fake)
	e.fake.On("run --rm --interactive", okJSON(probeOK)).Once()
	st, err = ProfileStatus(ctx, e.Env, "dev", true)
	if err != nil || st.State != "running" || st.Health != "healthy" || strings.Join(st.Tools, ",") != "get_issue" ||
		strings.Join(st.Servers, ",") != "fetch" || st.Current {
		t.Errorf("healthy gateway: %+v, %v; want healthy with get_issue, not current", st, err)
	}

	e.fake.On("run --rm --interactive", okJSON(probeOpen))
	st, err = ProfileStatus(ctx, e.Env, "dev", false)
	if err != nil || st.Health != "open" || st.Tools != nil {
		t.Errorf("open gateway: %+v, %v; want open, no tools", st, err)
	}
	noToken(t, e.fake)
}

// TestProfilesAndStatuses: no profile named means every configured one, sorted; a named one
// must be configured, which is said without asking docker; Statuses keeps the order.
func TestProfilesAndStatuses(t *testing.T) {
	e := newReconcileEnv(t)
	got, err := e.Profiles(nil)
	if err != nil || strings.Join(got, ",") != "default,dev" {
		t.Errorf("Profiles(none) = %v, %v; want default,dev", got, err)
	}
	if got, err := e.Profiles([]string{"dev"}); err != nil || strings.Join(got, ",") != "dev" {
		t.Errorf("Profiles(dev) = %v, %v", got, err)
	}
	var up *UnknownProfileError
	if got, err := e.Profiles([]string{"dev", "nosuch"}); got != nil || !errors.As(err, &up) || up.Profile != "nosuch" || strings.Join(up.Known, ",") != "default,dev" {
		t.Errorf("Profiles(nosuch) = %v, %v; want an *UnknownProfileError listing default and dev", got, err)
	}
	e.noCalls(t)

	e.bind(t, "a00000000000", &manifest.Manifest{Project: "alpha", Servers: []string{"fetch"}})
	e.fake.On("container inspect --format {{json .}} abox-gw-default", notFound).Once()
	e.fake.On("container inspect --format {{json .}} abox-gw-dev", notFound).Once()
	sts, err := Statuses(context.Background(), e.Env, []string{"default", "dev"}, false)
	if err != nil || len(sts) != 2 || sts[0].Profile != "default" || sts[1].Profile != "dev" || strings.Join(sts[1].Projects, ",") != "alpha" {
		t.Errorf("Statuses = %+v, %v; want default then dev with alpha", sts, err)
	}
}

// TestUnbindProject: the last project to leave a profile takes its gateway with it; a profile
// that still has a project keeps its gateway.
func TestUnbindProject(t *testing.T) {
	e := newReconcileEnv(t)
	e.bind(t, "a00000000000", &manifest.Manifest{Project: "alpha", Servers: []string{"fetch"}})
	e.bind(t, "b00000000000", &manifest.Manifest{Project: "beta", Servers: []string{"time"}})
	mgr := e.Manager()
	got, err := mgr.UnbindProject(context.Background(), e.Paths.GatewaysDir(), "a00000000000")
	if err != nil || len(got) != 1 || got[0].Profile != "dev" || got[0].Removed || got[0].Err != nil {
		t.Fatalf("UnbindProject(alpha) = %+v, %v, want dev left, its gateway kept", got, err)
	}
	e.noCalls(t)
	e.fake.On("container inspect --format {{json .}} abox-gw-dev", running("any"))
	e.fake.On("stop -t 10 abox-gw-dev", docker.Result{})
	e.fake.On("rm --force --volumes abox-gw-dev", docker.Result{})
	got, err = mgr.UnbindProject(context.Background(), e.Paths.GatewaysDir(), "b00000000000")
	if err != nil || len(got) != 1 || !got[0].Removed {
		t.Fatalf("UnbindProject(beta) = %+v, %v, want the dev gateway removed", got, err)
	}
}

// TestBindProject: a project that declares a server mints its profile's token, which netd
// mounts; one that declares none leaves the profile without one.
func TestBindProject(t *testing.T) {
	gw := filepath.Join(t.TempDir(), "gateways")
	if _, err := BindProject(gw, "/src/a", "a00000000000", &manifest.Manifest{Project: "a", Profile: "bare"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadToken(filepath.Join(gw, "bare")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a profile without servers got a token: %v", err)
	}
	left, err := BindProject(gw, "/src/a", "a00000000000", &manifest.Manifest{Project: "a", Profile: "mcp", Servers: []string{"fetch"}}, nil)
	if err != nil || strings.Join(left, ",") != "bare" {
		t.Fatalf("BindProject to mcp = %v, %v, want it to leave bare", left, err)
	}
	if tok, err := ReadToken(filepath.Join(gw, "mcp")); err != nil || tok == "" {
		t.Errorf("token of mcp = %q, %v, want one minted", tok, err)
	}
	reg, err := LoadRegistry(filepath.Join(gw, "mcp"), "mcp")
	if err != nil || strings.Join(reg.Union().All(), ",") != "fetch" {
		t.Errorf("registry of mcp serves %v, %v, want fetch", reg.Union().All(), err)
	}
}

// TestProveAuth: without a token nothing is probed; an open gateway is an *AuthError around an
// *OpenError and records no proof; an enforcing one is recorded, and its proof spares the next
// check the probe.
func TestProveAuth(t *testing.T) {
	ctx := context.Background()
	gw := &docker.Container{ID: "gw0001", Image: "sha256:1"}
	e := newReconcileEnv(t)
	mgr := e.Manager()
	var te *TokenError
	if err := mgr.ProveAuth(ctx, e.Paths.Gateway("none"), "none", "abox-net", probeImage, 8812, gw); !errors.As(err, &te) {
		t.Errorf("ProveAuth without a token = %v, want a *TokenError", err)
	}
	e.noCalls(t)

	dir := e.Paths.Gateway("dev")
	e.fake.On("run --rm --interactive", okJSON(probeOpen)).Once()
	var ae *AuthError
	var open *OpenError
	if err := mgr.ProveAuth(ctx, dir, "dev", "abox-net", probeImage, 8812, gw); !errors.As(err, &ae) || !errors.As(err, &open) {
		t.Errorf("ProveAuth of an open gateway = %v, want an *AuthError around an *OpenError", err)
	}
	if AuthProven(dir, gw) {
		t.Error("an open gateway was recorded as proven")
	}
	e.fake.On("run --rm --interactive", okJSON(probeOK)).Once()
	if err := mgr.ProveAuth(ctx, dir, "dev", "abox-net", probeImage, 8812, gw); err != nil || !AuthProven(dir, gw) {
		t.Fatalf("ProveAuth of an enforcing gateway = %v, proven %v; want nil, true", err, AuthProven(dir, gw))
	}
	probes := len(e.fake.Calls())
	if err := mgr.ProveAuth(ctx, dir, "dev", "abox-net", probeImage, 8812, gw); err != nil || len(e.fake.Calls()) != probes {
		t.Errorf("ProveAuth with a proof = %v after %d more docker calls, want nil after none", err, len(e.fake.Calls())-probes)
	}
	noToken(t, e.fake)
}
