package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/statefs"
)

// What abox checks about Claude Code before a headless run: that it can log in.
//
// A fresh project's ~/.claude volume is empty, and `claude -p` then fails at authentication —
// after netd and the agent have started for nothing. The spec calls it the most common
// first-run failure, so abox looks first: a throwaway container tests whether the volume holds
// a login, without abox ever reading the credential. Its argv is runspec.json's login_check
// ([render.LoginCheckCommand]): audited by render's invariants and doctor like the agent's, and
// run exactly as written. A login seen is remembered in state, so later runs pay one `docker
// volume inspect`; `abox shell`, a missing volume or a run that ends logged out makes abox look
// again. (A volume removed and recreated between two runs is not noticed: docker reports no
// stable identity for it, its CreatedAt moves with every write. That run starts, ends asking
// for /login, and gets the same hint.)

// ErrNotLoggedIn matches every [*NotLoggedInError].
var ErrNotLoggedIn = errors.New("not logged in to Claude Code")

// NotLoggedInError is a headless run refused before anything started: the agent would have no
// credential, neither in its environment nor in the project's volume.
type NotLoggedInError struct{ Volume string }

func (e *NotLoggedInError) Error() string {
	return fmt.Sprintf("Claude Code is not logged in for this project: volume %s holds no login", e.Volume)
}

// Is makes a NotLoggedInError match [ErrNotLoggedIn].
func (e *NotLoggedInError) Is(target error) bool { return target == ErrNotLoggedIn }

// ErrNoLoginCheck is a runspec without a login check to run: it was rendered by an older abox.
var ErrNoLoginCheck = errors.New("runspec.json has no login check")

// credentialEnv are the variables through which Claude Code takes a credential, or another
// provider's, from its environment; with one set for the agent, the volume needs no login.
var credentialEnv = []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN",
	"CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_USE_FOUNDRY"}

// loginRecord is claude-login.json in the project's state: a login was seen in the volume.
type loginRecord struct {
	Volume string `json:"volume"`
	Seen   string `json:"seen_at"`
}

func loginFile(p paths.Project) string { return filepath.Join(p.Dir, "claude-login.json") }

// ForgetLogin makes the next run look at the volume again.
func ForgetLogin(p paths.Project) { os.Remove(loginFile(p)) }

// CheckLogin refuses, before anything starts, a headless run whose agent could not log in: no
// credential in its environment (the runspec's, or a secret attached under one of those
// names), and no login in the project's volume. The error is a [*NotLoggedInError] then.
func (s *Sandbox) CheckLogin(ctx context.Context, attached map[string]string) error {
	rs := s.Spec
	if credentialInEnv(rs, attached) {
		return nil
	}
	_, err := s.Docker.VolumeInspect(ctx, rs.ClaudeVol)
	if errors.Is(err, docker.ErrNotFound) {
		ForgetLogin(s.Project)
		return &NotLoggedInError{Volume: rs.ClaudeVol}
	}
	if err != nil {
		return err
	}
	var rec loginRecord
	if data, err := os.ReadFile(loginFile(s.Project)); err == nil && json.Unmarshal(data, &rec) == nil && rec.Volume == rs.ClaudeVol {
		return nil
	}
	ok, err := s.volumeHasLogin(ctx)
	if err != nil {
		return fmt.Errorf("looking for a Claude login in %s: %w", rs.ClaudeVol, err)
	}
	if !ok {
		return &NotLoggedInError{Volume: rs.ClaudeVol}
	}
	rec = loginRecord{Volume: rs.ClaudeVol, Seen: s.Now().UTC().Format(time.RFC3339)}
	if data, err := json.Marshal(rec); err == nil {
		_ = statefs.WriteFile(loginFile(s.Project), data, 0o600)
	}
	return nil
}

// credentialInEnv reports whether the agent's environment gives Claude Code a credential: a
// non-empty agent_env value in the runspec, or a secret attached under one of those names.
func credentialInEnv(rs *render.RunSpec, attached map[string]string) bool {
	args := rs.Agent.Args
	for i := 0; i+1 < len(args); i++ {
		if args[i] != "--env" && args[i] != "-e" {
			continue
		}
		k, v, hasValue := strings.Cut(args[i+1], "=")
		if slices.Contains(credentialEnv, k) && (v != "" || !hasValue) {
			return true
		}
	}
	for k := range attached {
		if slices.Contains(credentialEnv, k) {
			return true
		}
	}
	return false
}

// volumeHasLogin runs the runspec's login check, exactly as rendered: [render.LoginScript]
// exits 0 for a login, 1 for none.
func (s *Sandbox) volumeHasLogin(ctx context.Context) (bool, error) {
	lc := s.Spec.LoginCheck
	if len(lc.Args) == 0 {
		return false, ErrNoLoginCheck
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	_, err := s.Docker.Run(ctx, docker.Invocation{Args: lc.Argv()})
	var ee *docker.ExitError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &ee) && ee.Code == 1:
		return false, nil
	}
	return false, err
}

// LoggedOut reports whether a run ended with Claude Code asking for a login.
func LoggedOut(out *Outcome) bool {
	if !out.Summary.IsError {
		return false
	}
	text := strings.ToLower(out.Summary.LastText)
	return strings.Contains(text, "/login") || strings.Contains(text, "not logged in")
}
