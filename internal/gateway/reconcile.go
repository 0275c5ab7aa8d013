package gateway

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/aboxhq/abox/internal/artifact"
	"github.com/aboxhq/abox/internal/catalog"
	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/paths"
)

// Env is what the gateway's orchestration needs of the machine: cli fills it from the App, and
// tests fill it with the fake docker CLI and temporary directories. Nothing here is a global.
type Env struct {
	Docker  *docker.Client
	Paths   paths.Paths
	Config  *config.Config
	Custom  config.CustomServers
	MCPHome string // the Docker MCP Toolkit's home, whose catalogs/ are read
	// Secrets renders the secrets file of the gateway serving u from the store, writing nothing
	// ([Manager.Up] writes it). internal/secrets, which imports this package, does the work, so
	// the caller supplies it; without it no plan is computed.
	Secrets func(ctx context.Context, u *Union, cat *catalog.Catalog) (Secrets, error)
	// Progress receives one line per step; Warn each problem a reconciliation goes on with.
	// nil discards them.
	Progress func(format string, args ...any)
	Warn     func(Warning)
	Now      func() time.Time                           // nil is time.Now
	Sleep    func(context.Context, time.Duration) error // between probe attempts; nil waits for real
}

// Warning is a problem [Reconcile] reports and goes on with: a finding of the plan that is no
// error, or a gateway that will not be probed.
type Warning struct {
	Message string
	// Finding is the plan's finding; nil for a gateway that will not be probed because no netd
	// image is on this machine.
	Finding *catalog.Finding
}

// Manager is the [Manager] of e's docker client, progress and clock.
func (e *Env) Manager() *Manager {
	return &Manager{Docker: e.Docker, Progress: e.Progress, Now: e.Now, Sleep: e.Sleep, GatewaysDir: e.Paths.GatewaysDir()}
}

func (e *Env) warn(w Warning) {
	if e.Warn != nil {
		e.Warn(w)
	}
}

// UnknownProfileError is returned for a profile config.yaml does not define.
type UnknownProfileError struct {
	Profile    string
	ConfigFile string
	Known      []string // the profiles it defines, sorted
}

func (e *UnknownProfileError) Error() string {
	return fmt.Sprintf("profile %q is not configured in %s", e.Profile, e.ConfigFile)
}

func unknownProfile(e *Env, profile string) error {
	return &UnknownProfileError{Profile: profile, ConfigFile: e.Paths.ConfigFile(), Known: e.Config.ProfileNames()}
}

// Is makes the error match [ErrNoProfile].
func (e *UnknownProfileError) Is(target error) bool { return target == ErrNoProfile }

// UnusedError is returned by [Reconcile] for a profile none of whose projects declares a
// server, and that has no gateway to remove.
type UnusedError struct{ Profile string }

func (e *UnusedError) Error() string {
	return fmt.Sprintf("no project on profile %s declares an MCP server", e.Profile)
}

// LeakError refuses a gateway under which a bound project's netd would pass other projects'
// tools ([Registry.Leaks]).
type LeakError struct {
	Profile string
	Leaks   []Leak // at least one
}

func (e *LeakError) Error() string {
	var lines []string
	for _, l := range e.Leaks {
		lines = append(lines, l.Lines()...)
	}
	return fmt.Sprintf("the %s gateway would give a project other projects' tools:\n- %s", e.Profile, strings.Join(lines, "\n- "))
}

// PlanError refuses a plan with errors: the gateway would start anyway, with fewer tools than
// the projects declare, or abort later.
type PlanError struct {
	Profile string
	Errors  []string     // [Plan.Errors]
	Kind    catalog.Kind // the kind of the first finding that is an error; "" when none is
}

func (e *PlanError) Error() string {
	return fmt.Sprintf("the %s gateway cannot start:\n- %s", e.Profile, strings.Join(e.Errors, "\n- "))
}

// SecretsError refuses a gateway some of whose servers' secrets the store does not hold: the
// gateway would start anyway and hand those servers the string <UNKNOWN>.
type SecretsError struct {
	Profile string
	Missing []string // [Secrets.Missing], each "<secret> (<who needs it>)"
}

func (e *SecretsError) Error() string {
	return fmt.Sprintf("the %s gateway needs secrets the store does not hold; it would hand these servers <UNKNOWN>:\n- %s",
		e.Profile, strings.Join(e.Missing, "\n- "))
}

// Secret is the first missing secret's name, the one to store first.
func (e *SecretsError) Secret() string {
	first, _, _ := strings.Cut(e.Missing[0], " ")
	return first
}

// LoadPlan computes the profile's gateway from its registry, the host's catalogs and the
// secrets store. mint creates the profile's token when it has none; otherwise a missing token
// is "". It returns the token too.
func LoadPlan(ctx context.Context, e *Env, profile string, mint bool) (*Plan, string, error) {
	if _, ok := e.Config.Profiles[profile]; !ok {
		return nil, "", unknownProfile(e, profile)
	}
	if e.Secrets == nil {
		return nil, "", errors.New("gateway: Env.Secrets is not set; the gateway's secrets cannot be rendered")
	}
	dir := e.Paths.Gateway(profile)
	if mint {
		if err := EnsureToken(dir); err != nil {
			return nil, "", err
		}
	}
	token, err := ReadToken(dir)
	if err != nil && (mint || !errors.Is(err, fs.ErrNotExist)) {
		return nil, "", err
	}
	reg, err := LoadRegistry(dir, profile)
	if err != nil {
		return nil, "", err
	}
	cat, err := catalog.Load(e.MCPHome, e.Custom)
	if err != nil {
		return nil, "", err
	}
	sec, err := e.Secrets(ctx, reg.Union(), cat)
	if err != nil {
		return nil, "", err
	}
	plan, err := NewPlan(PlanInput{Profile: profile, Dir: dir, Config: e.Config, Registry: reg,
		Catalog: cat, Custom: e.Custom, Token: token, Secrets: sec})
	return plan, token, err
}

// ReconcileOptions are the choices of one [Reconcile].
type ReconcileOptions struct {
	Force  bool   // recreate the gateway even if nothing changed
	Prefer string // a netd image to probe from, when it exists
}

// Result is what [Reconcile] did.
type Result struct {
	Plan *Plan
	// Removed is set when no bound project declares a server and the gateway was removed.
	Removed bool
	Outcome *Outcome // nil when Removed, or when Up failed before it knew
}

// Reconcile brings the profile's gateway in line with its registry, under the profile's lock:
// planned, refused when a project's netd would pass other projects' tools ([*LeakError]), when
// the plan has errors ([*PlanError]) or when the store lacks a secret ([*SecretsError]);
// otherwise images present, created or recreated as needed, and probed from a netd image.
// A gateway no project needs is removed ([*UnusedError] when there is none). Errors of
// [Manager.Up] come back as an [*UpError], with the Result so far.
func Reconcile(ctx context.Context, e *Env, profile string, o ReconcileOptions) (*Result, error) {
	if _, ok := e.Config.Profiles[profile]; !ok { // before the lock makes the profile a directory
		return nil, unknownProfile(e, profile)
	}
	unlock, err := LockProfile(e.Paths.Gateway(profile))
	if err != nil {
		return nil, err
	}
	defer unlock()
	plan, token, err := LoadPlan(ctx, e, profile, true)
	if err != nil {
		return nil, err
	}
	if plan.Union.Empty() {
		return removeUnused(ctx, e, plan)
	}
	if err := check(e, plan); err != nil {
		return nil, err
	}
	if err := e.Docker.EnsureNetwork(ctx, e.Config.Network, map[string]string{"abox.managed": "true"}); err != nil {
		return nil, err
	}
	img := ProbeImage(ctx, e, plan, o.Prefer)
	if img == "" {
		e.warn(Warning{Message: fmt.Sprintf("the %s gateway will not be probed: no netd image on this machine", plan.Profile)})
	}
	mgr := e.Manager()
	res := &Result{Plan: plan}
	if res.Outcome, err = mgr.Up(ctx, plan, UpOptions{Force: o.Force, Token: token, ProbeImage: img}); err != nil {
		ue := &UpError{Profile: profile, Err: err}
		var unhealthy *UnhealthyError
		if errors.As(err, &unhealthy) {
			ue.Log = strings.TrimSpace(mgr.LogsTail(ctx, profile, token, 40))
		}
		return res, ue
	}
	return res, nil
}

// UpError is an error of [Manager.Up] within [Reconcile]: starting or probing the gateway
// failed. It unwraps to that error ([*UnhealthyError], [*OpenError], [*ImageMissingError],
// [docker.ErrDaemonUnreachable], …) and prints as it does.
type UpError struct {
	Profile string
	// Log is the end of the gateway's own log, the token and secret values removed, when the
	// gateway did not answer MCP.
	Log string
	Err error
}

func (e *UpError) Error() string { return e.Err.Error() }
func (e *UpError) Unwrap() error { return e.Err }

// check refuses a plan that leaks, has errors or lacks secrets, and warns of its other
// findings.
func check(e *Env, plan *Plan) error {
	if len(plan.Leaks) > 0 {
		return &LeakError{Profile: plan.Profile, Leaks: plan.Leaks}
	}
	pe := &PlanError{Profile: plan.Profile, Errors: plan.Errors()}
	for i, f := range plan.Findings {
		switch {
		case !f.Error:
			e.warn(Warning{Message: f.Message, Finding: &plan.Findings[i]})
		case pe.Kind == "":
			pe.Kind = f.Kind
		}
	}
	if len(pe.Errors) > 0 {
		return pe
	}
	if len(plan.Secrets.Missing) > 0 {
		return &SecretsError{Profile: plan.Profile, Missing: plan.Secrets.Missing}
	}
	return nil
}

// removeUnused removes the gateway of a profile none of whose projects declares a server: it
// would serve servers nobody asked for, with the docker socket.
func removeUnused(ctx context.Context, e *Env, plan *Plan) (*Result, error) {
	removed, err := e.Manager().Down(ctx, plan.Profile)
	if err != nil {
		return nil, err
	}
	if !removed {
		return nil, &UnusedError{Profile: plan.Profile}
	}
	return &Result{Plan: plan, Removed: true}, nil
}

// ProbeImage returns a netd image to run the health probe in: prefer when it exists, else the
// netd image of any project bound to the profile, as its runspec.json names it. "" when there
// is none.
func ProbeImage(ctx context.Context, e *Env, plan *Plan, prefer string) string {
	candidates := []string{prefer}
	if reg, err := LoadRegistry(plan.Dir, plan.Profile); err == nil {
		for _, h := range reg.Hashes() {
			candidates = append(candidates, artifact.NetdImage(e.Paths.Project(reg.Projects[h].Workspace)))
		}
	}
	seen := map[string]bool{"": true}
	for _, c := range candidates {
		if seen[c] {
			continue
		}
		seen[c] = true
		if ok, err := e.Docker.ImageExists(ctx, c); err == nil && ok {
			return c
		}
	}
	return ""
}
