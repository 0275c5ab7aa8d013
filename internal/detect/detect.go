// Package detect suggests a starting manifest for a workspace: the toolchains its marker files
// imply, and the egress those toolchains and its git remotes need.
//
// Registry hosts are never built in: they come from each toolchain's own configuration on the
// host (GOPROXY and GOSUMDB, npm's registry), which is also what users behind a mirror need.
// git is never run; .git/config is read as a file.
package detect

import (
	"bufio"
	"bytes"
	"context"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/aboxhq/abox/internal/egress"
	"github.com/aboxhq/abox/internal/wsfile"
)

// markers maps a file in the workspace root, or a pattern of one, to the toolchain it implies.
var markers = []struct{ pattern, toolchain string }{
	{"pyproject.toml", "python"}, {"requirements.txt", "python"}, {"setup.py", "python"}, {"uv.lock", "python"},
	{"go.mod", "go"},
	{"package.json", "node"},
	{"Cargo.toml", "rust"},
	{"pom.xml", "java"}, {"build.gradle", "java"}, {"build.gradle.kts", "java"},
	{"Gemfile", "ruby"},
	{"composer.json", "php"},
	{"*.sln", "dotnet"}, {"*.csproj", "dotnet"}, {"*.fsproj", "dotnet"},
}

// Toolchains returns the toolchains whose marker files exist in the workspace root, in the
// order of the manifest's toolchain list.
func Toolchains(ws string) []string {
	entries, err := os.ReadDir(ws)
	if err != nil {
		return nil
	}
	var out []string
	for _, m := range markers {
		for _, e := range entries {
			if ok, _ := filepath.Match(m.pattern, e.Name()); ok && !slices.Contains(out, m.toolchain) {
				out = append(out, m.toolchain)
			}
		}
	}
	return out
}

// Registries are the host's own registry settings.
type Registries struct {
	GoProxy string // the value of `go env GOPROXY`
	GoSumDB string // the value of `go env GOSUMDB`
	NPM     string // the value of `npm config get registry`
}

// fixed are registry hosts of toolchains with no host-side configuration to read.
var fixed = map[string][]string{
	"python": {"pypi.org", "files.pythonhosted.org"},
	"rust":   {"crates.io", "static.crates.io", "index.crates.io"},
	"java":   {"repo.maven.apache.org", "repo1.maven.org"},
	"ruby":   {"rubygems.org", "index.rubygems.org"},
	"php":    {"repo.packagist.org", "packagist.org"},
	"dotnet": {"api.nuget.org"},
}

// Egress suggests allowlist entries for toolchains, in canonical form. A registry the host's
// configuration names by a host that cannot be an entry (an IP address, localhost) is left out:
// the sandbox cannot reach it by name, and the manifest would refuse it.
func Egress(toolchains []string, reg Registries) []string {
	var out []string
	add := func(hosts ...string) {
		for _, h := range hosts {
			if h != "" && !slices.Contains(out, h) {
				out = append(out, h)
			}
		}
	}
	for _, t := range toolchains {
		switch t {
		case "go":
			add(goProxyEntries(reg.GoProxy)...)
			add(sumDBEntry(reg.GoSumDB))
		case "node":
			add(urlEntry(reg.NPM))
		default:
			add(fixed[t]...)
		}
	}
	return out
}

// goProxyEntries returns the entries of the URLs of a GOPROXY list ("direct" and "off" skip).
// As the go command does, an entry without a scheme that is not a single word or an absolute
// path is an https URL: "proxy.example.test/go" means https://proxy.example.test/go.
func goProxyEntries(v string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == '|' }) {
		f = strings.TrimSpace(f)
		if strings.ContainsAny(f, ".:/") && !strings.Contains(f, ":/") && !strings.HasPrefix(f, "/") {
			f = "https://" + f
		}
		if e := urlEntry(f); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// sumDBEntry returns the entry of the host GOSUMDB is fetched from: "name[+key] [url]".
func sumDBEntry(v string) string {
	fields := strings.Fields(v)
	switch {
	case len(fields) == 0 || fields[0] == "off":
		return ""
	case len(fields) > 1:
		return urlEntry(fields[1])
	}
	name, _, _ := strings.Cut(fields[0], "+")
	e, ok := entry(name, 0)
	if !ok {
		return ""
	}
	return e.String()
}

// urlEntry returns the entry for the host of an http or https URL: the host alone on https's
// port, host:port on any other. It returns "" for other schemes and for hosts that cannot be an
// entry.
func urlEntry(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	port := 0
	switch u.Scheme {
	case "https":
	case "http":
		port = 80
	default:
		return ""
	}
	if p := u.Port(); p != "" {
		if port, err = strconv.Atoi(p); err != nil {
			return ""
		}
	}
	if port == 443 {
		port = 0
	}
	e, ok := entry(u.Hostname(), port)
	if !ok {
		return ""
	}
	return e.String()
}

// entry returns host and port (0: the list's default ports) as a parsed egress entry, or false
// if they do not make one.
func entry(host string, port int) (egress.Entry, bool) {
	if host == "" || strings.ContainsAny(host, ":*") {
		return egress.Entry{}, false
	}
	s := host
	if port != 0 {
		s += ":" + strconv.Itoa(port)
	}
	e, err := egress.Parse(s)
	return e, err == nil
}

// maxGitConfig bounds the .git/config read for its remotes: the workspace's, so the agent's to
// replace (wsfile reads only a regular file, and not through a symlink).
const maxGitConfig = 4 << 20

// GitRemotes returns allowlist entries for the workspace's git remotes, read from .git/config
// without running git: https remotes as the host, ssh remotes as host:port. github.com adds the
// API and archive hosts git and gh use.
func GitRemotes(ws string) []string {
	data, err := wsfile.Read(filepath.Join(ws, ".git", "config"), maxGitConfig, false)
	if err != nil {
		return nil
	}
	var out []string
	inRemote := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			inRemote = strings.HasPrefix(strings.ToLower(line), "[remote ")
			continue
		}
		key, val, ok := strings.Cut(line, "=")
		if !inRemote || !ok || strings.ToLower(strings.TrimSpace(key)) != "url" {
			continue
		}
		for _, e := range remoteEntries(configValue(val)) {
			if !slices.Contains(out, e) {
				out = append(out, e)
			}
		}
	}
	return out
}

// configValue decodes a git config value: double quotes group and are removed, \" and \\
// stand for themselves (other escapes make a value git itself refuses, so "" is returned), and
// an unquoted # or ; starts a comment.
func configValue(v string) string {
	var b strings.Builder
	quoted := false
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '"':
			quoted = !quoted
		case c == '\\':
			if i+1 == len(v) || v[i+1] != '"' && v[i+1] != '\\' {
				return ""
			}
			i++
			b.WriteByte(v[i])
		case (c == '#' || c == ';') && !quoted:
			return strings.TrimSpace(b.String())
		default:
			b.WriteByte(c)
		}
	}
	return strings.TrimSpace(b.String())
}

// remoteEntries maps one remote URL to allowlist entries.
func remoteEntries(raw string) []string {
	host, port := remoteHost(raw)
	e, ok := entry(host, port)
	if !ok {
		return nil
	}
	out := []string{e.String()}
	if e.Host == "github.com" {
		out = append(out, "api.github.com", "codeload.github.com")
		if e.Port != 0 {
			out = append(out, "github.com")
		}
	}
	return out
}

// remoteHost parses scheme://[user@]host[:port]/path and the scp-like [user@]host:path. port
// is 0 for https on its default port.
func remoteHost(raw string) (host string, port int) {
	if strings.Contains(raw, "://") {
		u, err := url.Parse(raw)
		if err != nil {
			return "", 0
		}
		switch u.Scheme {
		case "ssh", "git+ssh", "ssh+git":
			port = 22
		case "https":
		case "http":
			port = 80
		case "git":
			port = 9418
		default:
			return "", 0
		}
		if p := u.Port(); p != "" {
			if port, err = strconv.Atoi(p); err != nil {
				return "", 0
			}
		}
		if port == 443 && u.Scheme == "https" {
			port = 0
		}
		return u.Hostname(), port
	}
	// scp-like: the colon comes before any slash, and a user part ends at the last @ before it;
	// an @ after the colon belongs to the path.
	colon := strings.IndexByte(raw, ':')
	if colon < 0 || strings.ContainsAny(raw[:colon], "/\\") {
		return "", 0
	}
	h := raw[:colon]
	if at := strings.LastIndexByte(h, '@'); at >= 0 {
		h = h[at+1:]
	}
	return h, 22
}

// RegistryProbe is what [HostRegistries] asks of the host's tools; hostprobe.System answers it.
type RegistryProbe interface {
	NPMRegistry(ctx context.Context) (string, error)
	GoEnv(ctx context.Context, names ...string) ([]string, error)
}

// HostRegistries asks the host's go and npm which registries they use; a tool that is absent
// or fails leaves its fields empty, and [Egress] then suggests the public defaults.
func HostRegistries(ctx context.Context, p RegistryProbe) Registries {
	var reg Registries
	if vals, err := p.GoEnv(ctx, "GOPROXY", "GOSUMDB"); err == nil && len(vals) == 2 {
		reg.GoProxy, reg.GoSumDB = vals[0], vals[1]
	}
	reg.NPM, _ = p.NPMRegistry(ctx)
	return reg
}

// SuggestEgress returns, for each toolchain, the hosts [Egress] suggests for it alone.
func SuggestEgress(toolchains []string, reg Registries) map[string][]string {
	out := map[string][]string{}
	for _, t := range toolchains {
		out[t] = Egress([]string{t}, reg)
	}
	return out
}
