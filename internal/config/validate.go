package config

import (
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/aboxhq/abox/internal/egress"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/policy"
)

var (
	networkRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)
	versionRe = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+([.+-][0-9A-Za-z.-]{1,40})?$`)
	sha256Re  = regexp.MustCompile(`^[0-9a-f]{64}$`)
	memoryRe  = regexp.MustCompile(`^[1-9][0-9]{0,12}[bkmg]?$`)
	cpusRe    = regexp.MustCompile(`^[0-9]{1,3}(\.[0-9]{1,2})?$`)
	// imageRe follows docker's reference grammar: [domain[:port]/]path[:tag][@sha256:digest].
	imageRe = regexp.MustCompile(`^(?:[a-zA-Z0-9](?:[a-zA-Z0-9.-]*[a-zA-Z0-9])?(?::[0-9]{1,5})?/)?` +
		`[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*` +
		`(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[0-9a-f]{64})?$`)
	imageIDRe = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	// releaseURLRe is a plain https base URL: no credentials, query or fragment.
	releaseURLRe = regexp.MustCompile(`^https://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[A-Za-z0-9._~/-]*)?$`)
)

// IsImageRef reports whether s is a docker image reference or a local image id.
func IsImageRef(s string) bool {
	return len(s) <= 512 && (imageRe.MatchString(s) || imageIDRe.MatchString(s))
}

// IsPinned reports whether the image reference names exactly one image: a digest or an image id.
func IsPinned(s string) bool {
	return imageIDRe.MatchString(s) || (imageRe.MatchString(s) && strings.Contains(s, "@sha256:"))
}

// IsSHA256 reports whether s is 64 lower-case hex digits.
func IsSHA256(s string) bool { return sha256Re.MatchString(s) }

type checker struct{ problems []manifest.Problem }

func (c *checker) add(loc, hint, format string, args ...any) {
	c.problems = append(c.problems, manifest.Problem{Loc: loc, Msg: fmt.Sprintf(format, args...), Hint: hint})
}

// Validate checks every field and returns a [*manifest.Error] listing every problem, or nil.
func (c *Config) Validate(source string) error {
	var k checker
	if !networkRe.MatchString(c.Network) {
		k.add("network", "", "%q is not a valid docker network name", c.Network)
	}
	k.image(c.Image)
	k.claude(c.ClaudeCode)
	if !IsImageRef(c.Gateway.Image) || !IsPinned(c.Gateway.Image) {
		k.add("gateway.image", "pin it by digest with `abox gateway update`", "%q is not repo@sha256:<digest> or a local image id sha256:<id>", c.Gateway.Image)
	}
	k.profiles(c.Profiles)
	k.ports(c.EgressPorts)
	k.agentEnv(c.AgentEnv, c.ClaudeCode.Injected())
	k.agent(c.Agent)
	k.limits(c.Limits)
	k.rtk(c.RTK)
	k.defaults(c.Defaults)
	if len(k.problems) == 0 {
		return nil
	}
	return &manifest.Error{Source: source, Problems: k.problems}
}

// maxID bounds agent.uid and agent.gid: Linux ids are 32-bit, and (uid_t)-1 means "none".
const maxID = 1<<31 - 1

func (k *checker) agent(a Agent) {
	for _, f := range []struct {
		loc string
		v   *int
	}{{"agent.uid", a.UID}, {"agent.gid", a.GID}} {
		switch {
		case f.v == nil:
		case *f.v == 0:
			k.add(f.loc, "set it to your own id (`id -u`, `id -g`), or remove it to use the workspace owner's", "0 is root's: abox never runs the agent as root")
		case *f.v < 0 || *f.v > maxID:
			k.add(f.loc, "", "%d is outside 1–%d", *f.v, maxID)
		}
	}
}

func (k *checker) image(im Image) {
	if !IsImageRef(im.Base) {
		k.add("image.base", "", "%q is not an image reference", im.Base)
	}
	for i, p := range im.CACertificates {
		k.hostPath(fmt.Sprintf("image.ca_certificates[%d]", i), p)
	}
}

func (k *checker) hostPath(loc, p string) {
	if err := manifest.CheckText(p, 1024); err != nil {
		k.add(loc, "", "%v", err)
		return
	}
	if !filepath.IsAbs(p) && !strings.HasPrefix(p, "~/") {
		k.add(loc, "write an absolute path or one starting with ~/", "%q is not absolute", p)
	}
}

func (k *checker) claude(cc ClaudeCode) {
	switch cc.Source {
	case SourceNative, SourceNPM, SourceFile:
	default:
		k.add("claude_code.source", "choose native, npm or file", "%q is not a known source", cc.Source)
		return
	}
	if !versionRe.MatchString(cc.Version) {
		k.add("claude_code.version", "pin an exact version such as "+DefaultClaudeVersion+"; latest and stable are not pins", "%q is not an exact version", cc.Version)
	}
	if cc.ReleaseURL != "" && (len(cc.ReleaseURL) > 512 || !releaseURLRe.MatchString(cc.ReleaseURL)) {
		k.add("claude_code.release_url", "write the base URL of the releases, such as "+DefaultClaudeReleaseURL,
			"%q is not a plain https URL", cc.ReleaseURL)
	}
	if cc.Credential != "" && !manifest.IsSecretName(cc.Credential) {
		k.add("claude_code.credential", "name a secret stored with `abox secrets set <name>`", "%q is not a secret name", cc.Credential)
	}
	if cc.APIUpstream != "" {
		if _, err := policy.ModelUpstream(cc.APIUpstream); err != nil || len(cc.APIUpstream) > 512 {
			k.add("claude_code.api_upstream", "write the https URL of the API, such as "+policy.DefaultModelUpstream,
				"%q is not an https URL without user, query or fragment", cc.APIUpstream)
		} else if cc.Credential == "" {
			k.add("claude_code.api_upstream", "set claude_code.credential too, or remove api_upstream", "is used only when the credential is injected")
		}
	}
	switch cc.ServerTools {
	case "", ServerToolsRefuse:
	case ServerToolsAllow:
		if cc.Credential == "" {
			k.add("claude_code.server_tools", "set claude_code.credential too, or remove server_tools", "is used only when the credential is injected")
		}
	default:
		k.add("claude_code.server_tools", "write refuse (the default) or allow", "%q is neither refuse nor allow", cc.ServerTools)
	}
	if cc.SHA256 != "" && !IsSHA256(cc.SHA256) {
		k.add("claude_code.sha256", "", "is not 64 lower-case hex digits")
	}
	if cc.Source == SourceFile {
		if cc.Path == "" {
			k.add("claude_code.path", "set claude_code.path to the claude binary", "is required when source is file")
		} else {
			k.hostPath("claude_code.path", cc.Path)
		}
		if cc.SHA256 == "" {
			k.add("claude_code.sha256", "set it to the output of sha256sum on the file", "is required when source is file")
		}
	}
}

func (k *checker) profiles(ps map[string]Profile) {
	if len(ps) == 0 {
		k.add("profiles", "add profiles: {default: {port: 8811}}", "at least one profile is required")
	}
	ports := map[int]string{}
	for _, name := range slices.Sorted(maps.Keys(ps)) {
		p := ps[name]
		loc := manifest.KeyLoc("profiles", name)
		if !manifest.IsProjectName(name) {
			k.add(loc, "", "%q is not a valid profile name", name)
		}
		if p.Port < 1024 || p.Port > 65535 {
			k.add(loc+".port", "", "%d is outside 1024–65535", p.Port)
		} else if other, dup := ports[p.Port]; dup {
			k.add(loc+".port", "give each profile its own port", "%d is also the port of profile %q", p.Port, other)
		}
		ports[p.Port] = name
		if err := manifest.CheckText(p.Description, 200); err != nil {
			k.add(loc+".description", "", "%v", err)
		}
	}
}

func (k *checker) ports(ports []int) {
	seen := map[int]bool{}
	for i, p := range ports {
		switch {
		case p < 1 || p > 65535:
			k.add(fmt.Sprintf("egress_ports[%d]", i), "", "%d is outside 1–65535", p)
		case seen[p]:
			k.add(fmt.Sprintf("egress_ports[%d]", i), "", "%d is listed twice", p)
		}
		seen[p] = true
	}
	if len(ports) == 0 {
		k.add("egress_ports", "the usual value is [443]", "is empty")
	}
}

func (k *checker) agentEnv(env map[string]string, injected bool) {
	for _, name := range slices.Sorted(maps.Keys(env)) {
		loc := manifest.KeyLoc("agent_env", name)
		if !manifest.IsEnvName(name) {
			k.add(loc, "", "%q is not a valid environment variable name", name)
		} else if slices.Contains(manifest.ReservedEnv, name) || strings.HasPrefix(name, "ABOX_") {
			k.add(loc, "", "%q is set by abox itself", name)
		} else if injected && slices.Contains(ClaudeCredentialEnv, name) {
			k.add(loc, "remove it: netd adds the credential claude_code.credential names", "%q is set by abox when the credential is injected", name)
		}
		if err := manifest.CheckText(env[name], 4096); err != nil {
			k.add(loc, "", "%v", err)
		}
	}
}

func (k *checker) limits(l Limits) {
	if l.Pids < 64 || l.Pids > 1<<20 {
		k.add("limits.pids", "", "%d is outside 64–1048576", l.Pids)
	}
	if !memoryRe.MatchString(l.Memory) {
		k.add("limits.memory", "write a size such as 4g or 512m", "%q is not a memory size", l.Memory)
	}
	if l.CPUs != "" && !cpusRe.MatchString(l.CPUs) {
		k.add("limits.cpus", "write a number such as 2 or 1.5", "%q is not a CPU count", l.CPUs)
	}
	if l.MaskWalk < 1000 || l.MaskWalk > 10_000_000 {
		k.add("limits.mask_walk", "", "%d is outside 1000–10000000", l.MaskWalk)
	}
	if l.NetdLogs == "" {
		return
	}
	if n, ok := parseSize(l.NetdLogs); !ok {
		k.add("limits.netd_logs", "write a size such as 256m or 1g", "%q is not a size", l.NetdLogs)
	} else if n < policy.MinLogLimit || n > policy.MaxLogLimit {
		k.add("limits.netd_logs", "choose a cap from 1m to 16g; the default is 256m", "%s is outside 1m–16g", l.NetdLogs)
	}
}

// parseSize reads a size in docker's --memory syntax (512m, 4g, 1048576) as bytes. A size too
// large for an int64 reads as the largest one.
func parseSize(s string) (int64, bool) {
	if !memoryRe.MatchString(s) {
		return 0, false
	}
	unit := int64(1)
	switch s[len(s)-1] {
	case 'k':
		unit = 1 << 10
	case 'm':
		unit = 1 << 20
	case 'g':
		unit = 1 << 30
	}
	n, err := strconv.ParseInt(strings.TrimRight(s, "bkmg"), 10, 64)
	if err != nil || n > math.MaxInt64/unit {
		return math.MaxInt64, true
	}
	return n * unit, true
}

func (k *checker) rtk(r RTK) {
	if r.Version != "" && !versionRe.MatchString(r.Version) {
		k.add("rtk.version", "", "%q is not an exact version", r.Version)
	}
	if r.Source != "" && r.Source != SourceNative && r.Source != SourceFile {
		k.add("rtk.source", "choose native or file", "%q is not a known source", r.Source)
	}
	if r.SHA256 != "" && !IsSHA256(r.SHA256) {
		k.add("rtk.sha256", "", "is not 64 lower-case hex digits")
	}
	if r.Path != "" {
		k.hostPath("rtk.path", r.Path)
	}
	if !r.Enabled {
		return
	}
	if r.SHA256 == "" {
		k.add("rtk.sha256", "set the sha256 of the rtk binary for this version", "is required when rtk is enabled")
	}
	if r.Source == SourceFile && r.Path == "" {
		k.add("rtk.path", "", "is required when rtk.source is file")
	}
}

func (k *checker) defaults(d Defaults) {
	for i, p := range d.Mask {
		if err := manifest.CheckRelGlob(p); err != nil {
			k.add(fmt.Sprintf("defaults.mask[%d]", i), "", "%v", err)
		}
	}
	for i, p := range d.Watch {
		if err := manifest.CheckRelGlob(p); err != nil {
			k.add(fmt.Sprintf("defaults.watch[%d]", i), "", "%v", err)
		}
	}
	for i, h := range d.EgressMandatory {
		if _, err := egress.Parse(h); err != nil {
			k.add(fmt.Sprintf("defaults.egress_mandatory[%d]", i), "", "%v", err)
		}
	}
	if d.Runtime != "" && !slices.Contains(manifest.Runtimes, d.Runtime) {
		k.add("defaults.runtime", "set it to runc, or to runsc with gVisor registered in Docker", "%q is not one of %s", d.Runtime, strings.Join(manifest.Runtimes, ", "))
	}
}

// RepoDigest picks, among an image's RepoDigests, the pinned reference (repo@sha256:…) of the
// repository tag names, comparing them as docker does (docker.io/ and library/ are implied).
// An image with only one digest gets that one. "" when none is pinned.
func RepoDigest(tag string, digests []string) string {
	norm := func(r string) string {
		r = strings.TrimPrefix(strings.TrimPrefix(r, "docker.io/"), "index.docker.io/")
		return strings.TrimPrefix(r, "library/")
	}
	repo := tag
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i]
	}
	for _, d := range digests {
		if r, _, ok := strings.Cut(d, "@"); ok && norm(r) == norm(repo) && IsPinned(d) {
			return d
		}
	}
	if len(digests) == 1 && IsPinned(digests[0]) {
		return digests[0]
	}
	return ""
}
