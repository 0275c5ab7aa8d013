package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/sandbox"
	"github.com/aboxhq/abox/internal/statefs"
)

// What abox checks about Claude Code around a headless run: that it can log in, and which
// session --resume names.
//
// A fresh project's ~/.claude volume is empty, and `claude -p` then fails at authentication —
// after netd and the agent have started for nothing. The spec calls it the most common
// first-run failure, so abox looks first: a throwaway container (the agent image, no network,
// no capabilities, the volume read-only) tests whether the volume holds a login, without abox
// ever reading the credential. A login seen is remembered in state, so later runs pay one
// `docker volume inspect`; `abox shell`, a missing volume or a run that ends logged out makes
// abox look again. (A volume removed and recreated between two runs is not noticed: docker
// reports no stable identity for it, its CreatedAt moves with every write. That run starts,
// ends asking for /login, and gets the same hint.)

// credentialEnv are the variables through which Claude Code takes a credential, or another
// provider's, from its environment; with one set for the agent, the volume needs no login.
var credentialEnv = []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN",
	"CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_USE_FOUNDRY"}

const loginHint = "run `abox shell` once and log Claude Code in there (`claude`, then /login); the login stays in the project's volume for every later run"

// loginScript exits 0 when the volume mounted at /claude holds a login (the OAuth credentials
// file, an API key accepted in /login, or an apiKeyHelper), 1 when it holds none, 3 when it
// cannot be read.
const loginScript = `cd /claude || exit 3
if [ -s .credentials.json ] || grep -qs '"primaryApiKey"' .claude.json || grep -qs '"apiKeyHelper"' settings.json; then exit 0; fi
exit 1`

// loginRecord is claude-login.json in the project's state: a login was seen in the volume.
type loginRecord struct {
	Volume string `json:"volume"`
	Seen   string `json:"seen_at"`
}

func loginFile(p *project) string { return filepath.Join(p.state.Dir, "claude-login.json") }

// forgetLogin makes the next run look at the volume again.
func forgetLogin(p *project) { os.Remove(loginFile(p)) }

// checkLogin refuses, before anything starts, a headless run whose agent could not log in: no
// credential in its environment, and no login in the project's volume.
func (a *App) checkLogin(ctx context.Context, p *project, rs *render.RunSpec) error {
	if credentialInEnv(rs, p.manifest.EnvSecrets) {
		return nil
	}
	_, err := a.docker().VolumeInspect(ctx, rs.ClaudeVol)
	if errors.Is(err, docker.ErrNotFound) {
		forgetLogin(p)
		return notLoggedIn(rs.ClaudeVol)
	}
	if err != nil {
		return err
	}
	var rec loginRecord
	if data, err := os.ReadFile(loginFile(p)); err == nil && json.Unmarshal(data, &rec) == nil && rec.Volume == rs.ClaudeVol {
		return nil
	}
	ok, err := a.volumeHasLogin(ctx, rs)
	if err != nil {
		return fmt.Errorf("looking for a Claude login in %s: %w", rs.ClaudeVol, err)
	}
	if !ok {
		return notLoggedIn(rs.ClaudeVol)
	}
	rec = loginRecord{Volume: rs.ClaudeVol, Seen: a.Now().UTC().Format(time.RFC3339)}
	if data, err := json.Marshal(rec); err == nil {
		_ = statefs.WriteFile(loginFile(p), data, 0o600)
	}
	return nil
}

func notLoggedIn(volume string) error {
	return errorf(loginHint, "Claude Code is not logged in for this project: volume %s holds no login", volume)
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

// volumeHasLogin runs loginScript in a throwaway container of the agent image that has the
// volume read-only and nothing else: no network, no capabilities, the agent's uid.
func (a *App) volumeHasLogin(ctx context.Context, rs *render.RunSpec) (bool, error) {
	id, ok := rs.AgentIdentity()
	if !ok {
		return false, errorf("run `abox up` to render it again", "runspec.json gives the agent no numeric --user")
	}
	vol := render.Mount{Type: "volume", Source: rs.ClaudeVol, Target: "/claude", ReadOnly: true}
	argv := []string{"run", "--rm", "--pull", "never", "--network", "none", "--cap-drop", "ALL",
		"--security-opt", "no-new-privileges", "--user", id.String(), "--read-only",
		"--label", "abox.managed=true", "--label", "abox.role=login-check",
		"--label", "abox.project=" + rs.Project, "--label", "abox.hash=" + rs.Hash,
		"--mount", vol.Arg(), rs.Agent.Image, "/bin/sh", "-c", loginScript}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	_, err := a.docker().Run(ctx, docker.Invocation{Args: argv})
	var ee *docker.ExitError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &ee) && ee.Code == 1:
		return false, nil
	}
	return false, err
}

// loggedOut reports whether a run ended with Claude Code asking for a login.
func loggedOut(out *sandbox.Outcome) bool {
	if !out.Summary.IsError {
		return false
	}
	text := strings.ToLower(out.Summary.LastText)
	return strings.Contains(text, "/login") || strings.Contains(text, "not logged in")
}

// sessionIDRe is what --resume accepts: Claude Code's session ids are UUIDs; nothing that
// could read as a flag.
var sessionIDRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$`)

func checkResume(opts runOptions) error {
	switch {
	case opts.resume != "" && opts.cont:
		return errorf("pass one of them", "--resume and --continue both pick the session to continue")
	case opts.resume != "" && !sessionIDRe.MatchString(opts.resume):
		return errorf("list the sessions of past runs with `abox logs --runs`", "--resume %q is not a session id", opts.resume)
	}
	return nil
}
