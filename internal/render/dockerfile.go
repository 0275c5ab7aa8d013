package render

import (
	"bytes"
	"embed"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"text/template"

	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/policy"
)

//go:embed templates/*.tmpl
var templateFS embed.FS

// templates are parsed once; a missing key is an error, never an empty string.
var templates = template.Must(template.New("").Option("missingkey=error").
	Funcs(template.FuncMap{"join": strings.Join}).
	ParseFS(templateFS, "templates/*.tmpl"))

// basePackages is the agent's practical dev toolset.
var basePackages = []string{
	"bash", "ca-certificates", "curl", "git", "jq", "less", "openssh-client", "procps", "ripgrep", "xz-utils",
}

// toolchainPackages maps a toolchain to its Debian packages. Toolchains come from the base
// image's package archive, which apt verifies, rather than from unverified tarballs.
var toolchainPackages = map[string][]string{
	"python": {"python3", "python3-pip", "python3-venv"},
	"go":     {"golang-go"},
	"node":   {"nodejs", "npm"},
	"rust":   {"rustc", "cargo"},
	"java":   {"default-jdk-headless", "maven"},
	"ruby":   {"ruby-full"},
	"php":    {"php-cli", "composer"},
}

var registryRe = regexp.MustCompile(`^https://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[A-Za-z0-9._~/-]*)?$`)

type agentView struct {
	Version, Project, Base string
	CACerts                bool
	Packages               []string
	Claude                 config.ClaudeCode
	NPMRegistry            string
	RTK                    *config.RTK
	UID, GID               int
	User, Home             string
	CacheDirs              []string // made the agent's in the image, so a new cache volume is
}

func (m *model) agentDockerfile() ([]byte, error) {
	v := agentView{
		Version: m.s.Version, Project: m.m.Project, Base: m.c.Image.Base,
		CACerts: len(m.s.CACerts) > 0, Claude: m.c.ClaudeCode,
		UID: m.s.agent().UID, GID: m.s.agent().GID, User: AgentUser, Home: AgentHome,
	}
	pkgs := slices.Clone(basePackages)
	for _, t := range m.m.Toolchains {
		pkgs = append(pkgs, toolchainPackages[t]...)
	}
	if v.Claude.Source == config.SourceNPM {
		pkgs = append(pkgs, "nodejs", "npm")
		if m.s.NPMRegistry != "" {
			if !registryRe.MatchString(m.s.NPMRegistry) {
				return nil, fmt.Errorf("npm registry %q (from npm config) is not a plain https URL", m.s.NPMRegistry)
			}
			v.NPMRegistry = m.s.NPMRegistry
		}
	}
	slices.Sort(pkgs)
	v.Packages = slices.Compact(pkgs)
	if m.c.RTK.Enabled {
		r := m.c.RTK
		v.RTK = &r
	}
	for _, c := range m.m.Mounts.Caches {
		v.CacheDirs = append(v.CacheDirs, CacheDirs[c])
	}
	return execute("agent.Dockerfile.tmpl", v)
}

func (m *model) netdDockerfile() ([]byte, error) {
	return execute("netd.Dockerfile.tmpl", struct {
		Version, Base string
		UID           int
	}{m.s.Version, m.c.Image.Base, policy.NetdUID}) // one image for every project: a netd uid beside an agent of 990 needs no passwd entry
}

func execute(name string, data any) ([]byte, error) {
	var buf bytes.Buffer
	if err := templates.ExecuteTemplate(&buf, name, data); err != nil {
		return nil, fmt.Errorf("rendering %s: %w", name, err)
	}
	return buf.Bytes(), nil
}
