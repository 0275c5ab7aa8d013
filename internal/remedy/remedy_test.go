package remedy

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/approval"
	"github.com/aboxhq/abox/internal/catalog"
	"github.com/aboxhq/abox/internal/edit"
	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/images"
	"github.com/aboxhq/abox/internal/isolate"
	"github.com/aboxhq/abox/internal/launch"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/owner"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/provision"
	"github.com/aboxhq/abox/internal/sandbox"
	"github.com/aboxhq/abox/internal/secrets"
)

// carrier is a lower package's error that carries its own hint ([images.Error] and others).
type carrier struct{}

func (carrier) Error() string    { return "refused" }
func (carrier) HintText() string { return "the package's own hint" }

// TestStatus: the exit status and hint an error ends abox with. A hint attached on the way up
// wins over a sentinel's, which wins over one a lower package's error carries; an explicit
// exit status wins over a sentinel's.
func TestStatus(t *testing.T) {
	plain := errors.New("boom")
	tests := []struct {
		name string
		err  error
		code int
		hint string
	}{
		{"plain", plain, ExitError, ""},
		{"hinted", With(plain, "do this"), ExitError, "do this"},
		{"errorf", Errorf("do that", "boom %d", 1), ExitError, "do that"},
		{"boundary", Boundary(With(plain, "fix it")), ExitBoundary, "fix it"},
		{"sentinel", fmt.Errorf("loading: %w", approval.ErrNotApproved), ExitBoundary, "run `abox up` first: it builds the sandbox and approves the manifest"},
		{"sentinel, hint attached", With(fmt.Errorf("x: %w", approval.ErrNotApproved), "mine"), ExitBoundary, "mine"},
		{"sentinel under an explicit status", Exit(ExitExecChange, fmt.Errorf("x: %w", approval.ErrCorrupt)), ExitExecChange, "review agentbox.yaml; `abox up` approves it again"},
		{"carried hint", fmt.Errorf("up: %w", carrier{}), ExitError, "the package's own hint"},
		{"attached over carried", With(carrier{}, "outer"), ExitError, "outer"},
		{"outermost attached", With(With(plain, "inner"), "outer"), ExitError, "outer"},
		{"sentinel with a subject", &sandbox.Refusal{Kind: sandbox.ErrCredentialMissing, Subject: "claude.key", Msg: "no credential"}, ExitBoundary,
			"store it with `abox secrets set claude.key` (an API key, or the token `claude setup-token` prints)"},
		{"silent", Silent(7), 7, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, hint := Status(tc.err)
			if code != tc.code || hint != tc.hint {
				t.Errorf("Status(%v) = %d, %q; want %d, %q", tc.err, code, hint, tc.code, tc.hint)
			}
		})
	}
}

func TestIsExit(t *testing.T) {
	for _, tc := range []struct {
		err          error
		exit, silent bool
	}{
		{errors.New("x"), false, false},
		{With(errors.New("x"), "h"), false, false},
		{Boundary(errors.New("x")), true, false},
		{fmt.Errorf("wrapped: %w", Silent(3)), true, true},
	} {
		if exit, silent := IsExit(tc.err); exit != tc.exit || silent != tc.silent {
			t.Errorf("IsExit(%v) = %v, %v; want %v, %v", tc.err, exit, silent, tc.exit, tc.silent)
		}
	}
	if With(nil, "h") != nil {
		t.Error("With(nil) is not nil")
	}
}

// TestRemedies: each function names the fix of the errors it knows, with the fields they
// carry, and leaves alone what it does not know and what has a hint already.
func TestRemedies(t *testing.T) {
	other := errors.New("something else")
	tests := []struct {
		name string
		err  error
		code int
		hint string // a part of the hint; "" for none
	}{
		{"refusal: changed manifest", Refusal(&approval.ChangedError{Diff: "+ x"}, "/r"), ExitBoundary, "`abox up` approves it"},
		{"refusal: unrecordable", Refusal(sandbox.ErrUnrecordable, "/state/runs.jsonl"), ExitError, "the disk that holds /state/runs.jsonl"},
		{"refusal: no clone owner", Refusal(launch.ErrNoCloneOwner, "/r"), ExitBoundary, "abox render"},
		{"refusal: secrets", Refusal(&secrets.InUseError{}, "/r"), ExitError, "--force"},
		{"refusal: unknown", Refusal(other, "/r"), ExitError, ""},
		{"verdict: exec change", Verdict(&launch.ExecChangeError{Changes: 2}), ExitExecChange, "--accept-watch"},
		{"verdict: boundary", Verdict(fmt.Errorf("%w: netd", sandbox.ErrBoundary)), ExitBoundary, "abox doctor"},
		{"verdict: agent's exit", Verdict(&launch.AgentExitError{Code: 9}), 9, ""},
		{"verdict: collect", Verdict(&isolate.FinishError{ID: "r7", Step: isolate.StepCollect, Err: other}), ExitError, "`abox discard r7` removes it"},
		{"isolate: dirty", Isolate(isolate.ErrDirty, "r3"), ExitError, "`abox merge r3` again"},
		{"egress: ignored", Egress(&edit.IgnoredError{Host: "a.test"}), ExitError, "`abox egress unignore a.test`"},
		{"egress: hint kept", Egress(With(&edit.IgnoredError{Host: "a.test"}, "kept")), ExitError, "kept"},
		{"egress: stale, docker silent", Egress(&edit.StaleError{Skipped: other}), ExitError, "check that Docker answers"},
		{"mcp: remote", MCP(&edit.RemoteError{Server: "docs"}), ExitError, "`abox mcp rm-remote docs`"},
		{"edit: unapproved", Edit(&edit.UnapprovedError{}), ExitError, "approve it with `abox up` first"},
		{"provision: images refused", Provision(&provision.StepError{Step: provision.StepImages, Err: &images.Error{Refused: true}}, "p"), ExitBoundary, ""},
		{"provision: gateway", Provision(&provision.StepError{Step: provision.StepGateway, Err: &gateway.SecretsError{Profile: "p", Missing: []string{"gh.token (github)"}}}, "p"), ExitError, "abox secrets set"},
		{"provision: unconfirmed", Provision(provision.ErrUnconfirmed, "p"), ExitError, "`abox up --yes`"},
		{"gateway: open", Gateway(&gateway.UpError{Profile: "work", Err: &gateway.OpenError{Profile: "work", Auth: &gateway.AuthCheck{}}}, "work"), ExitBoundary, "`abox gateway up --force work`"},
		{"gateway auth: no token", GatewayAuth(&gateway.TokenError{Profile: "p", Err: other}, "p"), ExitBoundary, "mint it"},
		{"daemon", Daemon(other), ExitError, "`docker version`"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, hint := Status(tc.err)
			if code != tc.code || (tc.hint == "") != (hint == "") || !strings.Contains(hint, tc.hint) {
				t.Errorf("%v: %d, %q; want %d and a hint with %q", tc.err, code, hint, tc.code, tc.hint)
			}
		})
	}
	for name, err := range map[string]error{
		"Refusal": Refusal(nil, ""), "Verdict": Verdict(nil), "Gateway": Gateway(nil, ""), "Secrets": Secrets(nil),
		"Edit": Edit(nil), "Egress": Egress(nil), "MCP": MCP(nil), "Provision": Provision(nil, ""), "Load": Load(nil), "Daemon": Daemon(nil),
	} {
		if err != nil {
			t.Errorf("%s(nil) = %v, want nil", name, err)
		}
	}
}

// TestRemediesOfSetup: the fixes of the errors of loading, secrets, images and catalogs name
// the file, secret or workspace the error carries.
func TestRemediesOfSetup(t *testing.T) {
	other := errors.New("bad")
	tests := []struct {
		name string
		err  error
		code int
		hint string
	}{
		{"load: no manifest", Load(fmt.Errorf("x: %w", manifest.ErrNotFound)), ExitError, "`abox init`"},
		{"load: config", Load(&project.ConfigError{File: "/c/config.yaml", Err: other}), ExitError, "fix /c/config.yaml"},
		{"load: manifest", Load(&project.ManifestError{Err: other}), ExitError, "`abox render`"},
		{"identity", Identity(&owner.RootOwnedError{Workspace: "/w\x1b[2J"}), ExitError, `chown -R <user>: /w\x1b[2J`},
		{"secrets: daemon", Secrets(&secrets.DetectError{Err: secrets.ErrNoDaemon}), ExitError, "start the Docker daemon"},
		{"secrets: detect", Secrets(&secrets.DetectError{Err: other}), ExitError, "`docker version`"},
		{"secrets: config", Secrets(&secrets.ConfigError{File: "/c/secrets.yaml", Err: other}), ExitError, "fix /c/secrets.yaml"},
		{"secrets: loose", Secrets(&secrets.ReadError{Name: "n", File: "/f", Err: secrets.ErrLoosePerms}), ExitError, "`chmod 600 /f`"},
		{"secrets: no terminal", Secrets(&secrets.ReadError{Name: "gh.token", Err: secrets.ErrNoTerminal}), ExitError, "`abox secrets set gh.token --stdin`"},
		{"secrets: unmapped", Secrets(&secrets.UnmappedError{Name: "a\x1bb"}), ExitError, `abox secrets set a\x1bb`},
		{"secrets: drifted", Secrets(&secrets.AttentionError{Verb: "check", Fix: secrets.Row{Status: secrets.Drifted}}), ExitError, "`abox secrets sync`"},
		{"secrets: other attention", Secrets(&secrets.AttentionError{Verb: "check"}), ExitError, "`abox secrets check` again"},
		{"secrets: unknown", Secrets(other), ExitError, ""},
		{"build: failed", Build(&images.BuildError{Tag: "t", Err: other}), ExitError, "--no-cache"},
		{"volume: no agent user", Provision(&provision.StepError{Step: provision.StepVolume, Err: sandbox.ErrNoAgentUser}, "p"), ExitError, "`abox render`"},
		{"host config: claude", HostConfig(&catalog.HostConfigError{ClaudeConfig: "/h/.claude.json", Err: other}), ExitError, "ABOX_CLAUDE_CONFIG"},
		{"running tools: not running", RunningTools(gateway.ErrNotRunning, "p"), ExitError, "`abox up`"},
		{"running tools: no answer", RunningTools(gateway.ErrNoAnswer, "work"), ExitError, "`abox gateway status work`"},
		{"gateway update: pull", GatewayUpdate(&gateway.PullError{}), ExitError, "registry is reachable"},
		{"isolate: flagged", Isolate(isolate.ErrFlagged, "r9"), ExitError, "`abox merge r9 --force`"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, hint := Status(tc.err)
			if code != tc.code || (tc.hint == "") != (hint == "") || !strings.Contains(hint, tc.hint) {
				t.Errorf("%v: %d, %q; want %d and a hint with %q", tc.err, code, hint, tc.code, tc.hint)
			}
		})
	}
	if got := Leak(gateway.Leak{Project: "a", Unlisted: []string{"fetch"}}); !strings.Contains(got, "`abox mcp add fetch --tool NAME`") {
		t.Errorf("Leak(unlisted) = %q", got)
	}
	for _, k := range []catalog.Kind{catalog.Unknown, catalog.ToolCollision, catalog.Unpinned, catalog.LocalImage} {
		if Finding(k) == Finding(catalog.Kind("no such kind")) {
			t.Errorf("Finding(%v) is the fallback hint", k)
		}
	}
}
