package manifest

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// The charsets below are the boundary: every string from the manifest or the configuration that
// reaches a rendered file or an argv is checked against one of them, so templates only ever
// quote values that cannot break out of their quoting.
var (
	projectRe = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)
	serverRe  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	secretRe  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)
	envRe     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
	toolRe    = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`)
	headerRe  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]{0,127}$`)
	varRefRe  = regexp.MustCompile(`\$\{([^}]*)\}`)
	plainKey  = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]*$`)
)

// IsProjectName reports whether s may name a project or a profile: lower-case, 1–64 characters
// of [a-z0-9._-], starting with a letter or digit. Such names appear in container, volume and
// image names.
func IsProjectName(s string) bool { return projectRe.MatchString(s) }

// IsServerName reports whether s may name an MCP server.
func IsServerName(s string) bool { return serverRe.MatchString(s) }

// IsSecretName reports whether s may name a stored secret.
func IsSecretName(s string) bool { return secretRe.MatchString(s) }

// IsEnvName reports whether s may name an environment variable.
func IsEnvName(s string) bool { return envRe.MatchString(s) }

// IsToolName reports whether s may name an MCP tool.
func IsToolName(s string) bool { return toolRe.MatchString(s) }

// ReservedEnv are variables abox sets in the agent itself; env_secrets may not override them.
var ReservedEnv = []string{
	"ABOX_PROJECT", "ABOX_PROFILE", "ABOX_RUN", "CLAUDE_CONFIG_DIR", "PATH", "HOME", "USER",
	"SHELL", "HOSTNAME", "TERM", "LD_PRELOAD", "LD_LIBRARY_PATH",
}

// CheckText reports why s cannot be used in a rendered file: control characters (newlines
// included) and non-ASCII characters are refused, as are values longer than max bytes.
func CheckText(s string, max int) error {
	if len(s) > max {
		return fmt.Errorf("is longer than %d characters", max)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("contains a control character")
		}
		if r > 0x7e {
			return fmt.Errorf("contains a non-ASCII character %q", r)
		}
	}
	return nil
}

// CheckRelGlob reports why p is not a workspace-relative path or glob: it must be relative,
// stay inside the workspace, and use printable ASCII without quotes or backslashes.
func CheckRelGlob(p string) error {
	if p == "" {
		return fmt.Errorf("is empty")
	}
	if err := CheckText(p, 1024); err != nil {
		return err
	}
	if strings.ContainsAny(p, "\"'`\\$") {
		return fmt.Errorf("%q contains a quote, backslash or $", p)
	}
	if strings.HasPrefix(p, "/") {
		return fmt.Errorf("%q is absolute; write it relative to the workspace", p)
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return fmt.Errorf("%q leaves the workspace", p)
		}
	}
	return nil
}

// HeaderVars returns the names referenced as ${NAME} in an HTTP header value.
func HeaderVars(v string) []string {
	var out []string
	for _, m := range varRefRe.FindAllStringSubmatch(v, -1) {
		out = append(out, m[1])
	}
	return out
}

// KeyLoc returns the location of the value under key in the mapping at parent, for a [Problem]:
// "env_secrets.TOKEN". A key outside [A-Za-z0-9._-] is quoted with non-ASCII characters escaped,
// env_secrets."TOKEN\n", so that a hostile key can neither drive the terminal the problem is
// shown on nor pass for another key.
func KeyLoc(parent, key string) string {
	if plainKey.MatchString(key) {
		return parent + "." + key
	}
	return parent + "." + strconv.QuoteToASCII(key)
}

// ProjectNameFor derives a project name from the workspace directory ws, as `abox init` proposes
// it: the base name lower-cased, every character a name may not hold folded to "-", leading
// "._-" dropped, at most 64 bytes; "project" when nothing is left.
func ProjectNameFor(ws string) string {
	b := []byte(strings.ToLower(filepath.Base(ws)))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '-'
		}
	}
	name := strings.TrimLeft(string(b), "._-")
	if len(name) > 64 {
		name = name[:64]
	}
	if name == "" {
		return "project"
	}
	return name
}
