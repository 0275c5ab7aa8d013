// Package detect suggests a starting manifest for a workspace: the toolchains its marker files
// imply, and the egress those toolchains and its git remotes need.
//
// Registry hosts are never built in: they come from each toolchain's own configuration on the
// host (GOPROXY and GOSUMDB, npm's registry), which is also what users behind a mirror need.
// git is never run; .git/config is read as a file.
package detect

import (
	"bufio"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// markers maps a file in the workspace root to the toolchain it implies.
var markers = []struct{ file, toolchain string }{
	{"pyproject.toml", "python"}, {"requirements.txt", "python"}, {"setup.py", "python"}, {"uv.lock", "python"},
	{"go.mod", "go"},
	{"package.json", "node"},
	{"Cargo.toml", "rust"},
	{"pom.xml", "java"}, {"build.gradle", "java"}, {"build.gradle.kts", "java"},
	{"Gemfile", "ruby"},
	{"composer.json", "php"},
}

// Toolchains returns the toolchains whose marker files exist in the workspace root, in the
// order of the manifest's toolchain list.
func Toolchains(ws string) []string {
	var out []string
	for _, m := range markers {
		if _, err := os.Stat(filepath.Join(ws, m.file)); err == nil && !slices.Contains(out, m.toolchain) {
			out = append(out, m.toolchain)
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
}

// Egress suggests allowlist entries for toolchains.
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
			add(goProxyHosts(reg.GoProxy)...)
			add(sumDBHost(reg.GoSumDB))
		case "node":
			add(urlHost(reg.NPM))
		default:
			add(fixed[t]...)
		}
	}
	return out
}

// goProxyHosts returns the hosts of the URL entries of a GOPROXY list ("direct" and "off" skip).
func goProxyHosts(v string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == '|' }) {
		if h := urlHost(strings.TrimSpace(f)); h != "" {
			out = append(out, h)
		}
	}
	return out
}

// sumDBHost returns the host GOSUMDB is fetched from: "name[+key] [url]".
func sumDBHost(v string) string {
	fields := strings.Fields(v)
	switch {
	case len(fields) == 0 || fields[0] == "off":
		return ""
	case len(fields) > 1:
		return urlHost(fields[1])
	}
	name, _, _ := strings.Cut(fields[0], "+")
	return name
}

func urlHost(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") {
		return ""
	}
	return strings.ToLower(u.Hostname())
}

// GitRemotes returns allowlist entries for the workspace's git remotes, read from .git/config
// without running git: https remotes as the host, ssh remotes as host:port. github.com adds the
// API and archive hosts git and gh use.
func GitRemotes(ws string) []string {
	f, err := os.Open(filepath.Join(ws, ".git", "config"))
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	inRemote := false
	sc := bufio.NewScanner(f)
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
		for _, e := range remoteEntries(strings.Trim(strings.TrimSpace(val), `"`)) {
			if !slices.Contains(out, e) {
				out = append(out, e)
			}
		}
	}
	return out
}

// remoteEntries maps one remote URL to allowlist entries.
func remoteEntries(raw string) []string {
	host, port, ssh := remoteHost(raw)
	if host == "" {
		return nil
	}
	entry := host
	if ssh {
		entry = host + ":" + strconv.Itoa(port)
	}
	out := []string{entry}
	if host == "github.com" {
		out = append(out, "api.github.com", "codeload.github.com")
		if ssh {
			out = append(out, "github.com")
		}
	}
	return out
}

// remoteHost parses scheme://[user@]host[:port]/path and the scp-like [user@]host:path.
func remoteHost(raw string) (host string, port int, ssh bool) {
	if strings.Contains(raw, "://") {
		u, err := url.Parse(raw)
		if err != nil {
			return "", 0, false
		}
		host = strings.ToLower(u.Hostname())
		switch u.Scheme {
		case "ssh", "git+ssh", "ssh+git":
			port = 22
			if p, err := strconv.Atoi(u.Port()); err == nil {
				port = p
			}
			return host, port, true
		case "https", "http", "git":
			return host, 0, false
		}
		return "", 0, false
	}
	at := strings.LastIndexByte(raw, '@')
	rest := raw[at+1:]
	h, _, ok := strings.Cut(rest, ":")
	if !ok || strings.ContainsAny(h, "/\\") || h == "" {
		return "", 0, false
	}
	return strings.ToLower(h), 22, true
}
