package doctor

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/aboxhq/abox/internal/render"
)

var idRe = regexp.MustCompile(`^[a-z]+\.[a-z0-9-]+$`)

// everyCheck is the full list, probes included.
func everyCheck() []Check { return append(All(), Probes()...) }

// TestCheckIDsAndTitles: ids are "<area>.<kebab>" and unique; titles are lower-case.
func TestCheckIDsAndTitles(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range everyCheck() {
		if !idRe.MatchString(c.ID) {
			t.Errorf("check id %q does not match %s", c.ID, idRe)
		}
		if seen[c.ID] {
			t.Errorf("check id %q is listed twice", c.ID)
		}
		seen[c.ID] = true
		if c.Title == "" || strings.IndexFunc(c.Title, unicode.IsUpper) >= 0 {
			t.Errorf("check %s: title %q is not a lower-case phrase", c.ID, c.Title)
		}
		if c.Run == nil {
			t.Errorf("check %s has no Run", c.ID)
		}
	}
	for _, id := range []string{ // the original's ids, kept where the meaning is the same
		"host.docker", "host.docker-daemon", "manifest.schema", "servers.declared", "servers.pinned",
		"gateway.image-pinned", "gateway.image-digest", "gateway.running", "gateway.no-published-ports",
		"artifacts.rendered", "artifacts.current", "artifacts.integrity", "artifacts.review-copy",
		"artifacts.masks", "agent.no-docker-sock", "agent.no-published-ports", "agent.not-privileged",
		"agent.single-mcp-endpoint", "agent.env-secrets", "agent.auth-credential", "egress.mandatory",
		"egress.queue", "git.tamper", "workspace.exec-surface", "boundary.no-docker-sock",
		"boundary.capabilities", "boundary.artifacts-private",
	} {
		if !seen[id] {
			t.Errorf("check %s is missing", id)
		}
	}
}

// TestRisksHaveHints: risk ids follow the check id grammar and each applying risk has a hint.
func TestRisksHaveHints(t *testing.T) {
	f := newFixture(t, baseManifest).healthy()
	for _, r := range Risks(context.Background(), f.env()) {
		if !idRe.MatchString(r.ID) || r.Title == "" || r.Detail == "" {
			t.Errorf("risk %+v: bad id, title or detail", r)
		}
		if r.Applies && r.Hint == "" {
			t.Errorf("risk %s applies without a hint", r.ID)
		}
	}
}

// fixtures are machines in states a meta-test runs every check on: clean, fresh from init,
// without a daemon, and with things broken.
var fixtures = map[string]func(t *testing.T) *fixture{
	"clean": func(t *testing.T) *fixture { return newFixture(t, baseManifest).healthy() },
	"no daemon": func(t *testing.T) *fixture {
		return newFixture(t, baseManifest).daemonDown()
	},
	"nothing built or approved": func(t *testing.T) *fixture {
		f := newFixture(t, baseManifest).daemonUp().noSandbox()
		f.fake.On("", notFound("object")).Optional()
		removeAll(t, f.project.Approved())
		return f
	},
	"tampered": func(t *testing.T) *fixture {
		f := newFixture(t, baseManifest+"mounts:\n  watch: [deploy.sh]\n").healthy()
		f.editRunSpec(func(rs *render.RunSpec) {
			rs.Agent.Args = append(rs.Agent.Args, "--privileged", "-p", "80:80", "--cap-add", "SYS_ADMIN",
				"--mount", "type=bind,source=/var/run/docker.sock,target=/s", "--user", "root")
		})
		f.writeWS("agentbox.yaml", baseManifest+"egress: [evil.example]\n")
		return f
	},
	"not rendered": func(t *testing.T) *fixture {
		f := newFixture(t, baseManifest).daemonUp().noGateway().noSandbox()
		f.fake.On("", notFound("object")).Optional()
		removeAll(t, f.project.Artifacts())
		return f
	},
}

// TestEveryWarnAndFailHasAHint runs every check and states the risks on every fixture.
func TestEveryWarnAndFailHasAHint(t *testing.T) {
	for name, mk := range fixtures {
		t.Run(name, func(t *testing.T) {
			f := mk(t)
			for _, r := range Run(context.Background(), f.env(), All(), nil) {
				if (r.Status == Warn || r.Status == Fail) && r.Hint == "" {
					t.Errorf("%s: %s %q without a hint", r.ID, r.Status, r.Detail)
				}
				if r.Status == "" || r.Data == nil {
					t.Errorf("%s: empty status or nil data", r.ID)
				}
			}
		})
	}
}

// TestRunSkipsAndSurvivesPanics: --skip ids are reported skipped, a crashing check is a failure.
func TestRunSkipsAndSurvivesPanics(t *testing.T) {
	checks := []Check{
		{"test.skipped", "skipped", func(context.Context, *Env) Finding { t.Error("a skipped check ran"); return Finding{} }},
		{"test.panics", "panics", func(context.Context, *Env) Finding { panic("boom") }},
	}
	rs := Run(context.Background(), &Env{}, checks, map[string]bool{"test.skipped": true})
	if rs[0].Status != Skip || rs[1].Status != Fail || !strings.Contains(rs[1].Detail, "boom") || rs[1].Hint == "" {
		t.Errorf("Run = %+v", rs)
	}
}

func removeAll(t *testing.T, p string) {
	t.Helper()
	if err := os.RemoveAll(p); err != nil {
		t.Fatal(err)
	}
}
