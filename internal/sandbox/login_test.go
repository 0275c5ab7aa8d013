package sandbox

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/docker/dockertest"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/telemetry"
)

// loginFixture is a sandbox whose runspec's login check is rendered as `abox up` renders it.
func loginFixture(t *testing.T, env ...string) (*Sandbox, *dockertest.Fake, paths.Project, *render.RunSpec) {
	t.Helper()
	fake := dockertest.New(t)
	p := paths.Project{Dir: t.TempDir()}
	args := []string{"create", "--name", "agent-p-@RUN@", "--user", "1000:1000"}
	for _, kv := range env {
		args = append(args, "--env", kv)
	}
	rs := &render.RunSpec{Project: "p", Hash: "0123456789ab", ClaudeVol: "abox-claude-0123456789ab",
		Agent:      render.RunCommand{Args: args, Image: "abox-agent-p:1"},
		LoginCheck: render.LoginCheckCommand("p", "0123456789ab", render.Identity{UID: 1000, GID: 1000}, "abox-agent-p:1")}
	s := &Sandbox{Docker: docker.NewClient(fake, nil), Project: p, Spec: rs, Now: func() time.Time { return time.Unix(1e9, 0) }}
	return s, fake, p, rs
}

const volumeJSON = `{"Name":"abox-claude-0123456789ab","CreatedAt":"2026-11-29T10:00:00Z"}`

// TestCheckLogin: no volume or no login in it refuses with the `abox shell` hint; a login seen
// is remembered, so the next run only inspects the volume, until the volume is gone; a
// credential in the agent's environment needs no docker at all.
func TestCheckLogin(t *testing.T) {
	ctx := context.Background()
	t.Run("credential in env", func(t *testing.T) {
		a, _, _, _ := loginFixture(t, "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_OAUTH_TOKEN=tok")
		if err := a.CheckLogin(ctx, nil); err != nil {
			t.Errorf("checkLogin = %v, want nil without docker", err)
		}
	})
	t.Run("no volume", func(t *testing.T) {
		a, fake, _, _ := loginFixture(t)
		fake.On("volume inspect", docker.Result{ExitCode: 1, Stderr: []byte("Error: No such volume: abox-claude-0123456789ab\n")})
		err := a.CheckLogin(ctx, nil)
		if !errors.Is(err, ErrNotLoggedIn) { // cli gives it the abox shell hint (TestNotLoggedInHint)
			t.Errorf("checkLogin = %v, want ErrNotLoggedIn", err)
		}
	})
	t.Run("empty volume", func(t *testing.T) {
		a, fake, p, rs := loginFixture(t)
		fake.On("volume inspect", docker.Result{Stdout: []byte(volumeJSON)})
		fake.On("run --rm", docker.Result{ExitCode: 1})
		if err := a.CheckLogin(ctx, nil); err == nil || !strings.Contains(err.Error(), "not logged in") {
			t.Errorf("checkLogin = %v, want not logged in", err)
		}
		run := fake.Calls()[1].Args
		for _, want := range [][]string{{"--network", "none"}, {"--cap-drop", "ALL"}, {"--user", "1000:1000"},
			{"--mount", "type=volume,source=abox-claude-0123456789ab,target=/claude,readonly"}} {
			if i := slices.Index(run, want[0]); i < 0 || i+1 >= len(run) || run[i+1] != want[1] {
				t.Errorf("check container argv %q lacks %s %s", run, want[0], want[1])
			}
		}
		if !slices.Equal(run, rs.LoginCheck.Argv()) {
			t.Errorf("check container argv %q, want runspec.json's login_check %q exactly", run, rs.LoginCheck.Argv())
		}
		if _, err := os.Stat(loginFile(p)); err == nil {
			t.Error("a missing login was remembered")
		}
	})
	t.Run("login remembered", func(t *testing.T) {
		a, fake, _, _ := loginFixture(t)
		fake.On("volume inspect", docker.Result{Stdout: []byte(volumeJSON)}).Once()
		fake.On("run --rm", docker.Result{}).Once()
		fake.On("volume inspect", docker.Result{Stdout: []byte(volumeJSON)}).Once()
		fake.On("volume inspect", docker.Result{ExitCode: 1, Stderr: []byte("Error: No such volume: x\n")}).Once()
		fake.On("volume inspect", docker.Result{Stdout: []byte(volumeJSON)}).Once()
		fake.On("run --rm", docker.Result{ExitCode: 1}).Once()
		// seen, remembered, volume gone (forgotten), volume back without a login
		for i, wantErr := range []bool{false, false, true, true} {
			if err := a.CheckLogin(ctx, nil); (err != nil) != wantErr {
				t.Errorf("run %d: checkLogin = %v, want error %v", i+1, err, wantErr)
			}
		}
		var cmds []string
		for _, c := range fake.Calls() {
			cmds = append(cmds, c.Args[0]+" "+c.Args[1])
		}
		want := []string{"volume inspect", "run --rm", "volume inspect", "volume inspect", "volume inspect", "run --rm"}
		if !slices.Equal(cmds, want) {
			t.Errorf("docker calls %q, want %q", cmds, want)
		}
	})
	t.Run("check fails", func(t *testing.T) {
		a, fake, _, _ := loginFixture(t)
		fake.On("volume inspect", docker.Result{Stdout: []byte(volumeJSON)})
		fake.On("run --rm", docker.Result{ExitCode: 125, Stderr: []byte("docker: Error response from daemon: no image\n")})
		if err := a.CheckLogin(ctx, nil); err == nil || strings.Contains(err.Error(), "not logged in") {
			t.Errorf("checkLogin = %v, want the docker error", err)
		}
	})
}

func TestCredentialInEnv(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		attached map[string]string
		want     bool
	}{
		{"none", []string{"--env", "DISABLE_AUTOUPDATER=1"}, nil, false},
		{"api key", []string{"--env", "ANTHROPIC_API_KEY=sk"}, nil, true},
		{"empty value", []string{"--env", "ANTHROPIC_API_KEY="}, nil, false},
		{"passed through by name", []string{"--env", "CLAUDE_CODE_OAUTH_TOKEN"}, nil, true},
		{"attached secret", nil, map[string]string{"ANTHROPIC_API_KEY": "anthropic.key"}, true},
		{"other secret", nil, map[string]string{"DATABASE_URL": "db.url"}, false},
		{"a value, not a flag", []string{"--label", "ANTHROPIC_API_KEY=x"}, nil, false},
	} {
		rs := &render.RunSpec{Agent: render.RunCommand{Args: tc.args}}
		if got := credentialInEnv(rs, tc.attached); got != tc.want {
			t.Errorf("%s: credentialInEnv(%q, %v) = %v, want %v", tc.name, tc.args, tc.attached, got, tc.want)
		}
	}
}

func TestLoggedOut(t *testing.T) {
	for _, tc := range []struct {
		s    telemetry.Summary
		want bool
	}{
		{telemetry.Summary{IsError: true, LastText: "Invalid API key · Please run /login"}, true},
		{telemetry.Summary{IsError: true, LastText: "Not logged in"}, true},
		{telemetry.Summary{IsError: false, LastText: "how to run /login"}, false},
		{telemetry.Summary{IsError: true, LastText: "exit 1"}, false},
	} {
		if got := LoggedOut(&Outcome{Summary: tc.s}); got != tc.want {
			t.Errorf("LoggedOut(%+v) = %v, want %v", tc.s, got, tc.want)
		}
	}
}

// TestCheckLoginRunsTheRenderedArgv: abox runs the runspec's login check as written, whatever
// it holds, and refuses a runspec without one rather than building its own.
func TestCheckLoginRunsTheRenderedArgv(t *testing.T) {
	ctx := context.Background()
	s, fake, _, rs := loginFixture(t)
	rs.LoginCheck = render.RunCommand{Args: []string{"run", "--rm", "--label", "marker=1"}, Image: "img", Command: []string{"true"}}
	fake.On("volume inspect", docker.Result{Stdout: []byte(volumeJSON)})
	fake.On("run --rm", docker.Result{})
	if err := s.CheckLogin(ctx, nil); err != nil {
		t.Fatalf("CheckLogin = %v", err)
	}
	if got := fake.Calls()[1].Args; !slices.Equal(got, []string{"run", "--rm", "--label", "marker=1", "img", "true"}) {
		t.Errorf("docker %q, want the runspec's login_check exactly", got)
	}

	s, fake, _, rs = loginFixture(t)
	rs.LoginCheck = render.RunCommand{}
	fake.On("volume inspect", docker.Result{Stdout: []byte(volumeJSON)})
	if err := s.CheckLogin(ctx, nil); !errors.Is(err, ErrNoLoginCheck) {
		t.Errorf("CheckLogin without a login check = %v, want ErrNoLoginCheck", err)
	}
	if n := len(fake.Calls()); n != 1 {
		t.Errorf("%d docker calls, want only the volume inspect", n)
	}
}
