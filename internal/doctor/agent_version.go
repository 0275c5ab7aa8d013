package doctor

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/aboxhq/abox/internal/claudecode"
	"github.com/aboxhq/abox/internal/config"
)

// claudeVersionHint names the fix for a stale pin.
const claudeVersionHint = "pin a current version in claude_code.version (`npm view @anthropic-ai/claude-code version` names the latest), then run `abox up`"

// agentClaudeVersion: the pinned Claude Code is not older than config.MaxClaudeAge. Its date
// is the buildDate of the release manifest abox verified the native build against, else the
// date abox's default version was published, which also bounds the age of any older version.
// A file source is whatever the file holds: its version is the user's word.
func agentClaudeVersion(_ context.Context, e *Env) Finding {
	if e.Config == nil {
		return skipf("fix config.yaml first (see manifest.schema)", "config.yaml did not load")
	}
	cc := e.Config.ClaudeCode
	if cc.Source == config.SourceFile {
		return skipf("", "claude_code.source is file: the version is whatever the file is")
	}
	released, exact, basis := e.claudeReleased(cc)
	if released.IsZero() {
		return okf("%s, newer than abox's default %s (%s)", cc.Version, config.DefaultClaudeVersion, config.DefaultClaudeReleased).
			with("version", cc.Version)
	}
	days := int(e.clock().Sub(released).Hours() / 24)
	age := fmt.Sprintf("%d days old", days)
	if !exact {
		age = "at least " + age
	}
	detail := fmt.Sprintf("%s %s: %s (doctor warns past %d days)", cc.Version, basis, age, int(config.MaxClaudeAge.Hours()/24))
	f := okf("%s", detail)
	if time.Duration(days)*24*time.Hour > config.MaxClaudeAge {
		f = warnf(claudeVersionHint, "%s", detail)
	}
	return f.with("version", cc.Version).with("released", released.Format(time.DateOnly)).with("age_days", days).with("exact", exact)
}

// claudeReleased dates cc's version: the verified manifest's build date, abox's default's
// publication date, or that date as a bound for an older version (exact false). Zero for a
// version newer than the default, whose date abox cannot know without the network.
func (e *Env) claudeReleased(cc config.ClaudeCode) (when time.Time, exact bool, basis string) {
	if platform, err := claudecode.PlatformFor(runtime.GOARCH); err == nil && cc.Source == config.SourceNative {
		r, err := claudecode.LoadRecord(e.Paths.ClaudeReleases(), cc.Version, platform)
		if err == nil && r != nil && !r.Pinned && !r.BuildDate.IsZero() {
			return r.BuildDate, true, "was built " + r.BuildDate.Format(time.DateOnly) + " (its release manifest)"
		}
	}
	def, _ := time.Parse(time.DateOnly, config.DefaultClaudeReleased)
	switch claudecode.CompareVersions(cc.Version, config.DefaultClaudeVersion) {
	case 0:
		return def, true, "was published " + config.DefaultClaudeReleased + " (abox's default)"
	case -1:
		return def, false, "is older than abox's default " + config.DefaultClaudeVersion + " of " + config.DefaultClaudeReleased
	}
	return time.Time{}, false, ""
}
