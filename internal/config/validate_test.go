package config

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/manifest"
)

const (
	hex64  = "54dd518ee51b5c4641b02ddd4790b88cc0dafa59d76b6d07bc441d896a23bbea"
	digest = "@sha256:" + hex64
)

func TestDefaultValidates(t *testing.T) {
	if err := Default().Validate("config.yaml"); err != nil {
		t.Fatalf("Default().Validate() = %v", err)
	}
	for _, data := range []string{"", "\n", "# only comments\n", "{}\n"} {
		c, err := Parse([]byte(data), "config.yaml")
		if err != nil {
			t.Fatalf("Parse(%q) error = %v", data, err)
		}
		if diff := cmp.Diff(Default(), c); diff != "" {
			t.Errorf("Parse(%q) mismatch (-Default +Parse):\n%s", data, diff)
		}
	}
	if !IsPinned(DefaultGatewayImage) || !IsPinned(DefaultBaseImage) {
		t.Errorf("default images are not pinned: %q, %q", DefaultGatewayImage, DefaultBaseImage)
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	c := Default()
	c.Profiles["work"] = Profile{Port: 8812, Description: "work things"}
	c.RTK = RTK{Enabled: true, Version: "0.43.0", Source: SourceNative, SHA256: strings.Repeat("a", 64)}
	c.Image.CACertificates = []string{"~/corp-ca.pem"}
	c.ClaudeCode.Credential, c.ClaudeCode.APIUpstream = "claude-key", "https://llm.example.com/anthropic"
	data := c.Marshal()
	if !strings.HasPrefix(string(data), "# abox global configuration.") {
		t.Errorf("Marshal() lacks its header:\n%s", data)
	}
	got, err := Parse(data, "config.yaml")
	if err != nil {
		t.Fatalf("Parse(Marshal()) error = %v\n%s", err, data)
	}
	if diff := cmp.Diff(c, got); diff != "" {
		t.Errorf("Parse(Marshal()) mismatch (-want +got):\n%s", diff)
	}
}

func TestImageRefs(t *testing.T) {
	tests := []struct {
		ref           string
		isRef, pinned bool
	}{
		{"debian", true, false},
		{"debian:bookworm-slim", true, false},
		{"debian:bookworm-slim" + digest, true, true},
		{"debian" + digest, true, true},
		{"docker/mcp-gateway" + digest, true, true},
		{"registry.example.test:5000/team/img:1.2.3", true, false},
		{"registry.example.test:5000/team/img" + digest, true, true},
		{"localhost/img:tag", true, false},
		{"a__b/c--d/e.f_g:T_a.g-1", true, false},
		{"sha256:" + hex64, true, true},
		{"", false, false},
		{"Debian", false, false},
		{"debian:", false, false},
		{"debian@sha256:" + hex64[:63], false, false},
		{"debian@sha256:" + strings.ToUpper(hex64), false, false},
		{"debian@sha512:" + hex64, false, false},
		{"sha256:" + hex64[:10], true, false}, // a repository named sha256 with a tag, not an id
		{"debian:bookworm slim", false, false},
		{"debian bookworm", false, false},
		{`debian"`, false, false},
		{"debian'", false, false},
		{"debian\n", false, false},
		{"debian\nRUN curl x|sh", false, false},
		{"debian;id", false, false},
		{"$(id)", false, false},
		{"`id`", false, false},
		{"../debian", false, false},
		{"/debian", false, false},
		{"debian/", false, false},
		{"-debian", false, false},
		{"debian:-tag", false, false},
		{"debian:" + strings.Repeat("t", 128), true, false},
		{"debian:" + strings.Repeat("t", 129), false, false},
		{"dеbian", false, false}, // Cyrillic е
		{"debian．org/x", false, false},
		{"deb\u200dian", false, false},
		{"x" + strings.Repeat("/x", 256), false, false}, // longer than 512
		{"debian%00", false, false},
		{"debian\x00", false, false},
	}
	for _, tc := range tests {
		if got := IsImageRef(tc.ref); got != tc.isRef {
			t.Errorf("IsImageRef(%.40q) = %v, want %v", tc.ref, got, tc.isRef)
		}
		if got := IsPinned(tc.ref); got != tc.pinned {
			t.Errorf("IsPinned(%.40q) = %v, want %v", tc.ref, got, tc.pinned)
		}
	}
}

func TestIsSHA256(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{{hex64, true}, {strings.ToUpper(hex64), false}, {hex64[:63], false}, {hex64 + "0", false}, {"", false}, {"sha256:" + hex64, false}} {
		if got := IsSHA256(tc.in); got != tc.want {
			t.Errorf("IsSHA256(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

type configCase struct {
	name string
	yaml string
	want []manifest.Problem
}

func runConfigCases(t *testing.T, tests []configCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml+"\n"), "config.yaml")
			if diff := cmp.Diff(tc.want, problemsOf(t, err)); diff != "" {
				t.Errorf("Parse(%q) problems mismatch (-want +got):\n%s", tc.yaml, diff)
			}
		})
	}
}

// p is a problem without a hint.
func p(loc, msg string) []manifest.Problem { return []manifest.Problem{{Loc: loc, Msg: msg}} }

// ph is a problem with a hint.
func ph(loc, msg, hint string) []manifest.Problem {
	return []manifest.Problem{{Loc: loc, Msg: msg, Hint: hint}}
}

func TestValidateNetworkAndImages(t *testing.T) {
	const gwHint = "pin it by digest with `abox gateway update`"
	gw := func(ref string) []manifest.Problem {
		return ph("gateway.image", fmt.Sprintf("%q is not repo@sha256:<digest> or a local image id sha256:<id>", ref), gwHint)
	}
	runConfigCases(t, []configCase{
		{"network", "network: my_net.1-x", nil},
		{"network hostile", `network: "host --privileged"`, p("network", `"host --privileged" is not a valid docker network name`)},
		{"network empty", "network: ''", p("network", `"" is not a valid docker network name`)},
		{"network leading dash", "network: -x", p("network", `"-x" is not a valid docker network name`)},
		{"network cyrillic", "network: аbox", p("network", `"аbox" is not a valid docker network name`)},
		{"base tag", "image: {base: 'debian:bookworm'}", nil},
		{"base local id", "image: {base: 'sha256:" + hex64 + "'}", nil},
		{"base newline", `image: {base: "debian\nRUN id"}`, p("image.base", `"debian\nRUN id" is not an image reference`)},
		{"base space", `image: {base: "debian AS x"}`, p("image.base", `"debian AS x" is not an image reference`)},
		{"base quote", `image: {base: "debian\""}`, p("image.base", `"debian\"" is not an image reference`)},
		{"ca certificates", "image: {ca_certificates: [/etc/ssl/corp.pem, ~/ca.pem]}", nil},
		{"ca relative", "image: {ca_certificates: [corp.pem]}", ph("image.ca_certificates[0]", `"corp.pem" is not absolute`, "write an absolute path or one starting with ~/")},
		{"ca newline", `image: {ca_certificates: ["/a\n"]}`, p("image.ca_certificates[0]", "contains a control character")},
		{"ca other user", "image: {ca_certificates: [~root/ca.pem]}", ph("image.ca_certificates[0]", `"~root/ca.pem" is not absolute`, "write an absolute path or one starting with ~/")},
		{"gateway digest", "gateway: {image: 'docker/mcp-gateway" + digest + "'}", nil},
		{"gateway tag and digest", "gateway: {image: 'docker/mcp-gateway:v2" + digest + "'}", nil},
		{"gateway local id", "gateway: {image: 'sha256:" + hex64 + "'}", nil},
		{"gateway tag", "gateway: {image: 'docker/mcp-gateway:v2'}", gw("docker/mcp-gateway:v2")},
		{"gateway latest", "gateway: {image: docker/mcp-gateway}", gw("docker/mcp-gateway")},
		{"gateway short digest", "gateway: {image: 'docker/mcp-gateway@sha256:abc'}", gw("docker/mcp-gateway@sha256:abc")},
		{"gateway empty", "gateway: {image: ''}", gw("")},
		{"gateway hostile", "gateway: {image: \"x" + digest + " --privileged\"}", gw("x" + digest + " --privileged")},
	})
}

func TestValidateClaudeCode(t *testing.T) {
	const verHint = "pin an exact version such as " + DefaultClaudeVersion + "; latest and stable are not pins"
	const urlHint = "write the base URL of the releases, such as https://downloads.claude.ai/claude-code-releases"
	sha := strings.Repeat("a", 64)
	runConfigCases(t, []configCase{
		{"native", "claude_code: {source: native, version: 2.1.0}", nil},
		{"native with sha256", "claude_code: {source: native, version: 2.1.0, sha256: " + sha + "}", nil},
		{"native from a mirror", "claude_code: {source: native, version: 2.1.0, release_url: 'https://mirror.example:8443/claude/releases'}", nil},
		{"release_url over http", "claude_code: {release_url: 'http://mirror.example/r'}",
			ph("claude_code.release_url", `"http://mirror.example/r" is not a plain https URL`, urlHint)},
		{"release_url with credentials", "claude_code: {release_url: 'https://u:p@mirror.example/r'}",
			ph("claude_code.release_url", `"https://u:p@mirror.example/r" is not a plain https URL`, urlHint)},
		{"release_url with a query", "claude_code: {release_url: 'https://mirror.example/r?x=1'}",
			ph("claude_code.release_url", `"https://mirror.example/r?x=1" is not a plain https URL`, urlHint)},
		{"npm prerelease", "claude_code: {source: npm, version: 2.1.0-beta.1}", nil},
		{"file", "claude_code: {source: file, version: 2.1.0, path: /opt/claude, sha256: " + sha + "}", nil},
		{"file home", "claude_code: {source: file, path: ~/bin/claude, sha256: " + sha + "}", nil},
		{"unknown source", "claude_code: {source: curl}", ph("claude_code.source", `"curl" is not a known source`, "choose native, npm or file")},
		{"empty source", "claude_code: {source: ''}", ph("claude_code.source", `"" is not a known source`, "choose native, npm or file")},
		{"latest", "claude_code: {version: latest}", ph("claude_code.version", `"latest" is not an exact version`, verHint)},
		{"stable", "claude_code: {version: stable}", ph("claude_code.version", `"stable" is not an exact version`, verHint)},
		{"two parts", "claude_code: {version: '2.1'}", ph("claude_code.version", `"2.1" is not an exact version`, verHint)},
		{"range", "claude_code: {version: ^2.1.0}", ph("claude_code.version", `"^2.1.0" is not an exact version`, verHint)},
		{"hostile version", `claude_code: {version: "2.1.0/../../x"}`, ph("claude_code.version", `"2.1.0/../../x" is not an exact version`, verHint)},
		{"version newline", `claude_code: {version: "2.1.0\n"}`, ph("claude_code.version", `"2.1.0\n" is not an exact version`, verHint)},
		{"version shell", `claude_code: {version: "2.1.0-$(id)"}`, ph("claude_code.version", `"2.1.0-$(id)" is not an exact version`, verHint)},
		{"bad sha256", "claude_code: {sha256: " + strings.ToUpper(sha) + "}", p("claude_code.sha256", "is not 64 lower-case hex digits")},
		{"short sha256", "claude_code: {sha256: abc}", p("claude_code.sha256", "is not 64 lower-case hex digits")},
		{"file without path or sha256", "claude_code: {source: file}", []manifest.Problem{
			{Loc: "claude_code.path", Msg: "is required when source is file", Hint: "set claude_code.path to the claude binary"},
			{Loc: "claude_code.sha256", Msg: "is required when source is file", Hint: "set it to the output of sha256sum on the file"},
		}},
		{"file relative path", "claude_code: {source: file, path: claude, sha256: " + sha + "}", ph("claude_code.path", `"claude" is not absolute`, "write an absolute path or one starting with ~/")},
		{"file path newline", `claude_code: {source: file, path: "/x\ny", sha256: ` + sha + "}", p("claude_code.path", "contains a control character")},
		{"injected credential", "claude_code: {credential: claude-key}", nil},
		{"injected through a gateway", "claude_code: {credential: claude-key, api_upstream: 'https://llm.example.com/anthropic'}", nil},
		{"credential not a secret name", "claude_code: {credential: 'a b'}",
			ph("claude_code.credential", `"a b" is not a secret name`, "name a secret stored with `abox secrets set <name>`")},
		{"api_upstream over http", "claude_code: {credential: k, api_upstream: 'http://llm.example.com'}",
			ph("claude_code.api_upstream", `"http://llm.example.com" is not an https URL without user, query or fragment`, "write the https URL of the API, such as https://api.anthropic.com")},
		{"api_upstream with a query", "claude_code: {credential: k, api_upstream: 'https://llm.example.com/?key=x'}",
			ph("claude_code.api_upstream", `"https://llm.example.com/?key=x" is not an https URL without user, query or fragment`, "write the https URL of the API, such as https://api.anthropic.com")},
		{"server tools allowed", "claude_code: {credential: k, server_tools: allow}", nil},
		{"server tools refused", "claude_code: {server_tools: refuse}", nil},
		{"server_tools misspelt", "claude_code: {credential: k, server_tools: yes}",
			ph("claude_code.server_tools", `"yes" is neither refuse nor allow`, "write refuse (the default) or allow")},
		{"server tools allowed without a credential", "claude_code: {server_tools: allow}",
			ph("claude_code.server_tools", "is used only when the credential is injected", "set claude_code.credential too, or remove server_tools")},
		{"api_upstream without a credential", "claude_code: {api_upstream: 'https://llm.example.com'}",
			ph("claude_code.api_upstream", "is used only when the credential is injected", "set claude_code.credential too, or remove api_upstream")},
		{"unknown key", "claude_code: {channel: stable}", ph("line 1", `"channel" is not a known key`, "check the spelling against the configuration reference in README.md")},
	})
}

func TestValidateProfiles(t *testing.T) {
	runConfigCases(t, []configCase{
		{"several", "profiles: {default: {port: 8811}, work: {port: 8812, description: Work things}, z.9_-: {port: 65535}}", nil},
		{"lowest port", "profiles: {default: {port: 1024}}", nil},
		{"none", "profiles: {}", ph("profiles", "at least one profile is required", "add profiles: {default: {port: 8811}}")},
		{"null", "profiles:", ph("profiles", "at least one profile is required", "add profiles: {default: {port: 8811}}")},
		{"privileged port", "profiles: {default: {port: 1023}}", p("profiles.default.port", "1023 is outside 1024–65535")},
		{"port too high", "profiles: {default: {port: 65536}}", p("profiles.default.port", "65536 is outside 1024–65535")},
		{"no port", "profiles: {default: {}}", p("profiles.default.port", "0 is outside 1024–65535")},
		{"port text", "profiles: {default: {port: http}}", p("line 1", "cannot unmarshal !!str `http` into int")},
		{"same port", "profiles: {a: {port: 9000}, b: {port: 9000}}", ph("profiles.b.port", `9000 is also the port of profile "a"`, "give each profile its own port")},
		{"bad names", `profiles: {Work: {port: 9001}, "a b": {port: 9002}, "$(id)": {port: 9003}, "w\nx": {port: 9004}}`, []manifest.Problem{
			{Loc: `profiles."$(id)"`, Msg: `"$(id)" is not a valid profile name`},
			{Loc: "profiles.Work", Msg: `"Work" is not a valid profile name`},
			{Loc: `profiles."a b"`, Msg: `"a b" is not a valid profile name`},
			{Loc: `profiles."w\nx"`, Msg: `"w\nx" is not a valid profile name`},
		}},
		{"description newline", `profiles: {default: {port: 8811, description: "a\nb"}}`, p("profiles.default.description", "contains a control character")},
		{"description long", "profiles: {default: {port: 8811, description: " + strings.Repeat("d", 201) + "}}", p("profiles.default.description", "is longer than 200 characters")},
	})
}

func TestValidateEgressPortsAndEnv(t *testing.T) {
	runConfigCases(t, []configCase{
		{"ports", "egress_ports: [443, 22, 8443, 1, 65535]", nil},
		{"ports empty", "egress_ports: []", ph("egress_ports", "is empty", "the usual value is [443]")},
		{"port zero", "egress_ports: [443, 0]", p("egress_ports[1]", "0 is outside 1–65535")},
		{"port high", "egress_ports: [65536]", p("egress_ports[0]", "65536 is outside 1–65535")},
		{"port negative", "egress_ports: [-1]", p("egress_ports[0]", "-1 is outside 1–65535")},
		{"port twice", "egress_ports: [443, 443]", p("egress_ports[1]", "443 is listed twice")},
		{"port text", "egress_ports: [https]", p("line 1", "cannot unmarshal !!str `https` into int")},
		{"agent env", "agent_env: {FOO: bar, _X: '', lower: 'a b $(c)'}", nil},
		{"agent env reserved", "agent_env: {PATH: /tmp, HOME: /, LD_PRELOAD: /x.so, ABOX_GATEWAY_URL: x, CLAUDE_CONFIG_DIR: /x}", []manifest.Problem{
			{Loc: "agent_env.ABOX_GATEWAY_URL", Msg: `"ABOX_GATEWAY_URL" is set by abox itself`},
			{Loc: "agent_env.CLAUDE_CONFIG_DIR", Msg: `"CLAUDE_CONFIG_DIR" is set by abox itself`},
			{Loc: "agent_env.HOME", Msg: `"HOME" is set by abox itself`},
			{Loc: "agent_env.LD_PRELOAD", Msg: `"LD_PRELOAD" is set by abox itself`},
			{Loc: "agent_env.PATH", Msg: `"PATH" is set by abox itself`},
		}},
		{"agent env bad name", `agent_env: {"1X": a, "A-B": b, "A=B": c}`, []manifest.Problem{
			{Loc: "agent_env.1X", Msg: `"1X" is not a valid environment variable name`},
			{Loc: "agent_env.A-B", Msg: `"A-B" is not a valid environment variable name`},
			{Loc: `agent_env."A=B"`, Msg: `"A=B" is not a valid environment variable name`},
		}},
		{"agent env value newline", `agent_env: {FOO: "a\nB=c"}`, p("agent_env.FOO", "contains a control character")},
		{"agent env value non-ASCII", `agent_env: {FOO: "` + "\u202e" + `"}`, p("agent_env.FOO", `contains a non-ASCII character '\u202e'`)},
		{"agent env value long", "agent_env: {FOO: " + strings.Repeat("v", 4097) + "}", p("agent_env.FOO", "is longer than 4096 characters")},
	})
}

func TestValidateLimitsAndRTK(t *testing.T) {
	sha := strings.Repeat("b", 64)
	runConfigCases(t, []configCase{
		{"limits", "limits: {pids: 64, memory: 512m, cpus: '1.5'}", nil},
		{"limits max", "limits: {pids: 1048576, memory: 1099511627776, cpus: '128'}", nil},
		{"pids low", "limits: {pids: 63}", p("limits.pids", "63 is outside 64–1048576")},
		{"pids high", "limits: {pids: 1048577}", p("limits.pids", "1048577 is outside 64–1048576")},
		{"memory unit", "limits: {memory: 4G}", ph("limits.memory", `"4G" is not a memory size`, "write a size such as 4g or 512m")},
		{"memory zero", "limits: {memory: '0'}", ph("limits.memory", `"0" is not a memory size`, "write a size such as 4g or 512m")},
		{"memory empty", "limits: {memory: ''}", ph("limits.memory", `"" is not a memory size`, "write a size such as 4g or 512m")},
		{"memory hostile", `limits: {memory: "4g --privileged"}`, ph("limits.memory", `"4g --privileged" is not a memory size`, "write a size such as 4g or 512m")},
		{"cpus", "limits: {cpus: two}", ph("limits.cpus", `"two" is not a CPU count`, "write a number such as 2 or 1.5")},
		{"cpus precision", "limits: {cpus: '1.555'}", ph("limits.cpus", `"1.555" is not a CPU count`, "write a number such as 2 or 1.5")},
		{"netd logs", "limits: {netd_logs: 1m}", nil},
		{"netd logs max", "limits: {netd_logs: 16g}", nil},
		{"netd logs bytes", "limits: {netd_logs: 1048576}", nil},
		{"netd logs low", "limits: {netd_logs: 1023k}", ph("limits.netd_logs", "1023k is outside 1m–16g", "choose a cap from 1m to 16g; the default is 256m")},
		{"netd logs high", "limits: {netd_logs: 16385m}", ph("limits.netd_logs", "16385m is outside 1m–16g", "choose a cap from 1m to 16g; the default is 256m")},
		{"netd logs overflow", "limits: {netd_logs: 9999999999999g}", ph("limits.netd_logs", "9999999999999g is outside 1m–16g", "choose a cap from 1m to 16g; the default is 256m")},
		{"netd logs unit", "limits: {netd_logs: 1M}", ph("limits.netd_logs", `"1M" is not a size`, "write a size such as 256m or 1g")},
		{"netd logs hostile", `limits: {netd_logs: "1g; rm -rf /"}`, ph("limits.netd_logs", `"1g; rm -rf /" is not a size`, "write a size such as 256m or 1g")},
		{"mask walk", "limits: {mask_walk: 1000000}", nil},
		{"mask walk low", "limits: {mask_walk: 999}", p("limits.mask_walk", "999 is outside 1000–10000000")},
		{"mask walk high", "limits: {mask_walk: 10000001}", p("limits.mask_walk", "10000001 is outside 1000–10000000")},
		{"rtk enabled", "rtk: {enabled: true, sha256: " + sha + "}", nil},
		{"rtk file", "rtk: {enabled: true, source: file, path: /opt/rtk, sha256: " + sha + "}", nil},
		{"rtk enabled without sha256", "rtk: {enabled: true}", ph("rtk.sha256", "is required when rtk is enabled", "set the sha256 of the rtk binary for this version")},
		{"rtk file without path", "rtk: {enabled: true, source: file, sha256: " + sha + "}", p("rtk.path", "is required when rtk.source is file")},
		{"rtk npm", "rtk: {source: npm}", ph("rtk.source", `"npm" is not a known source`, "choose native or file")},
		{"rtk version", `rtk: {version: "latest"}`, p("rtk.version", `"latest" is not an exact version`)},
		{"rtk version hostile", `rtk: {version: "0.43.0/../../evil"}`, p("rtk.version", `"0.43.0/../../evil" is not an exact version`)},
		{"rtk bad sha256 while disabled", "rtk: {sha256: xyz}", p("rtk.sha256", "is not 64 lower-case hex digits")},
		{"rtk relative path", "rtk: {path: rtk}", ph("rtk.path", `"rtk" is not absolute`, "write an absolute path or one starting with ~/")},
	})
}

func TestValidateDefaults(t *testing.T) {
	runConfigCases(t, []configCase{
		{"lists", "defaults: {mask: [.env*, secrets/**], watch: [Makefile], egress_mandatory: [api.example.com, '*.example.org']}", nil},
		{"empty lists", "defaults: {mask: [], watch: [], egress_mandatory: []}", nil},
		{"mask absolute", "defaults: {mask: [/etc]}", p("defaults.mask[0]", `"/etc" is absolute; write it relative to the workspace`)},
		{"mask parent", "defaults: {mask: [../x]}", p("defaults.mask[0]", `"../x" leaves the workspace`)},
		{"watch quote", `defaults: {watch: ["a'b"]}`, p("defaults.watch[0]", `"a'b" contains a quote, backslash or $`)},
		{"watch newline", `defaults: {watch: ["a\nb"]}`, p("defaults.watch[0]", "contains a control character")},
		{"mandatory URL", "defaults: {egress_mandatory: ['https://api.example.com']}", p("defaults.egress_mandatory[0]", `"https://api.example.com" is a URL, not a host name`)},
		{"mandatory look-alike", "defaults: {egress_mandatory: [\"api.ex\u0430mple.com\"]}", p("defaults.egress_mandatory[0]", `"api.ex\u0430mple.com" is not ASCII`)},
		{"mandatory space", "defaults: {egress_mandatory: ['exa mple.com']}", p("defaults.egress_mandatory[0]", `"exa mple.com" is not a host name: it contains a space or control character`)},
		{"runtime runsc", "defaults: {runtime: runsc}", nil},
		{"runtime runc", "defaults: {runtime: runc}", nil},
		{"runtime unknown", "defaults: {runtime: runsc-netstack}", ph("defaults.runtime", `"runsc-netstack" is not one of runc, runsc`, "set it to runc, or to runsc with gVisor registered in Docker")},
	})
}

// TestRenamedKeys: keys of the original Python abox get a hint naming what replaced them.
func TestRenamedKeys(t *testing.T) {
	tests := []struct {
		key, hint string
	}{
		{"gateway_image", `"gateway_image" was replaced by gateway.image`},
		{"agent_base_image", `"agent_base_image" was replaced by image.base`},
		{"claude_version", `"claude_version" was replaced by claude_code.version`},
		{"egress_proxy", `"egress_proxy" was replaced by nothing: abox always filters TLS by server name`},
		{"scoped_dns", `"scoped_dns" was replaced by nothing: abox's resolver always answers only allowlisted names`},
		{"remote_user", `"remote_user" was replaced by agent.uid and agent.gid (by default the agent runs as the workspace owner)`},
		{"toolchain_versions", `"toolchain_versions" was replaced by nothing: toolchains come from the base image's package archive`},
		{"gateway_imag", "check the spelling against the configuration reference in README.md"},
	}
	for _, tc := range tests {
		t.Run(tc.key, func(t *testing.T) {
			data := "network: abox-net\n" + tc.key + ": x\n"
			_, err := Parse([]byte(data), "config.yaml")
			want := ph("line 2", fmt.Sprintf("%q is not a known key", tc.key), tc.hint)
			if diff := cmp.Diff(want, problemsOf(t, err)); diff != "" {
				t.Errorf("Parse(%q) problems mismatch (-want +got):\n%s", data, diff)
			}
		})
	}
}

func TestConfigStructure(t *testing.T) {
	runConfigCases(t, []configCase{
		{"unknown nested key", "limits: {memroy: 4g}", ph("line 1", `"memroy" is not a known key`, "check the spelling against the configuration reference in README.md")},
		{"unknown profile key", "profiles: {default: {port: 8811, host: 0.0.0.0}}", ph("line 1", `"host" is not a known key`, "check the spelling against the configuration reference in README.md")},
		{"duplicate key", "network: a\nnetwork: b", p("line 2", `mapping key "network" already defined at line 1`)},
		{"sequence", "- a", p("line 1", "cannot unmarshal !!seq into config.Config")},
		{"syntax", "network: [a", p("line 1", "did not find expected ',' or ']'")},
		{"every problem", "network: 'a b'\nlimits: {pids: 1}\negress_ports: [0]", []manifest.Problem{
			{Loc: "network", Msg: `"a b" is not a valid docker network name`},
			{Loc: "egress_ports[0]", Msg: "0 is outside 1–65535"},
			{Loc: "limits.pids", Msg: "1 is outside 64–1048576"},
		}},
	})
}

func TestProfileHelpers(t *testing.T) {
	c := Default()
	c.Profiles["work"] = Profile{Port: 8812}
	c.Profiles["alpha"] = Profile{Port: 8814}
	if diff := cmp.Diff([]string{"alpha", "default", "work"}, c.ProfileNames()); diff != "" {
		t.Errorf("ProfileNames() mismatch (-want +got):\n%s", diff)
	}
	if got := c.NextFreePort(); got != 8813 {
		t.Errorf("NextFreePort() = %d, want 8813", got)
	}
	if got := (&Config{}).NextFreePort(); got != DefaultPort {
		t.Errorf("NextFreePort() of no profiles = %d, want %d", got, DefaultPort)
	}
}

func TestNetdLogBytes(t *testing.T) {
	for in, want := range map[string]int64{"": 0, "1m": 1 << 20, "256m": 256 << 20, "16g": 16 << 30, "1048576": 1 << 20, "2048k": 2 << 20, "x": 0} {
		if got := (Limits{NetdLogs: in}).NetdLogBytes(); got != want {
			t.Errorf("NetdLogBytes(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestRepoDigest(t *testing.T) {
	const a = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	const b = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	for _, tc := range []struct {
		name, tag string
		digests   []string
		want      string
	}{
		{"the tag's repository among several", "docker/mcp-gateway:v2", []string{"mirror.example.com/gw@" + a, "docker/mcp-gateway@" + b}, "docker/mcp-gateway@" + b},
		{"docker.io and library are implied", "debian:bookworm", []string{"mirror.example.com/debian@" + a, "docker.io/library/debian@" + b}, "docker.io/library/debian@" + b},
		{"a registry port is not a tag", "registry.example.com:5000/gw", []string{"registry.example.com:5000/gw@" + a}, "registry.example.com:5000/gw@" + a},
		{"the only digest, from another name", "docker/mcp-gateway:v2", []string{"mirror.example.com/gw@" + a}, "mirror.example.com/gw@" + a},
		{"several, none of the repository", "docker/mcp-gateway:v2", []string{"x.example.com/a@" + a, "y.example.com/b@" + b}, ""},
		{"not pinned", "docker/mcp-gateway:v2", []string{"docker/mcp-gateway@sha256:short"}, ""},
		{"none", "docker/mcp-gateway:v2", nil, ""},
	} {
		if got := RepoDigest(tc.tag, tc.digests); got != tc.want {
			t.Errorf("%s: RepoDigest(%q, %q) = %q, want %q", tc.name, tc.tag, tc.digests, got, tc.want)
		}
	}
}
