package manifest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Hostile strings reused across fields. Each is written into YAML with %q, which YAML's
// double-quoted style reads back byte for byte.
var (
	cyrillicA = "dеmo"        // Cyrillic е (U+0435)
	fullwidth = "a．b"         // fullwidth full stop (U+FF0E)
	zwj       = "de\u200dmo"  // zero-width joiner
	rtl       = "de\u202eomm" // right-to-left override
	long65    = strings.Repeat("a", 65)
	long64    = strings.Repeat("a", 64)
)

type fieldCase struct {
	name string
	yaml string   // appended to base
	want []string // "loc: msg" lines; nil for a valid manifest
}

func runFieldCases(t *testing.T, tests []fieldCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := problems(t, base+tc.yaml+"\n")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Parse(%q) problems mismatch (-want +got):\n%s", base+tc.yaml, diff)
			}
		})
	}
}

func TestValidateVersion(t *testing.T) {
	runFieldCases(t, []fieldCase{
		{"absent", "", nil},
		{"one", "version: 1", nil},
		{"two", "version: 2", []string{"version: version 2 is not supported"}},
		{"negative", "version: -1", []string{"version: version -1 is not supported"}},
		{"quoted", `version: "1"`, []string{"line 3: cannot unmarshal !!str `1` into int"}},
		{"text", "version: one", []string{"line 3: cannot unmarshal !!str `one` into int"}},
		{"list", "version: [1]", []string{"line 3: cannot unmarshal !!seq into int"}},
	})
}

// nameCases are hostile values for the project and profile names, which reach container,
// volume and image names.
func nameCases(field, what string) []fieldCase {
	bad := func(v string) []string {
		return []string{fmt.Sprintf("%s: %q is not a valid %s name", field, v, what)}
	}
	set := func(v string) string { return fmt.Sprintf("%s: %q", field, v) }
	tests := []fieldCase{
		{"digits and punctuation", set("0a.b_c-d"), nil},
		{"64 characters", set(long64), nil},
		{"65 characters", set(long65), bad(long65)},
		{"very long", set(strings.Repeat("a", 100000)), bad(strings.Repeat("a", 100000))},
		{"upper case", set("Demo"), bad("Demo")},
		{"leading dash", set("-demo"), bad("-demo")},
		{"leading dot", set(".demo"), bad(".demo")},
		{"leading underscore", set("_demo"), bad("_demo")},
	}
	for _, v := range []string{
		"de mo", `de"mo`, "de'mo", "de\nmo", "demo\n", "$(id)", "`id`", "de;mo", "../demo", "de/mo",
		"de%00mo", "de\x00mo", "de\tmo", "de\x1bmo", cyrillicA, fullwidth, zwj, rtl, "dem\u00f6",
	} {
		tests = append(tests, fieldCase{fmt.Sprintf("%+q", v), set(v), bad(v)})
	}
	return tests
}

// TestValidateProject and TestValidateProfile write the whole document, since base already
// sets both fields and YAML refuses a key given twice.
func TestValidateProject(t *testing.T) {
	for _, tc := range nameCases("project", "project") {
		t.Run(tc.name, func(t *testing.T) {
			doc := tc.yaml + "\nprofile: default\n"
			got := problems(t, doc)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Parse(%q) problems mismatch (-want +got):\n%s", doc, diff)
			}
		})
	}
}

func TestValidateProfile(t *testing.T) {
	for _, tc := range nameCases("profile", "profile") {
		t.Run(tc.name, func(t *testing.T) {
			doc := "project: demo\n" + tc.yaml + "\n"
			got := problems(t, doc)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Parse(%q) problems mismatch (-want +got):\n%s", doc, diff)
			}
		})
	}
}

func TestValidateRequired(t *testing.T) {
	tests := []struct {
		name, doc string
		want      []string
	}{
		{"both missing", "servers: [a]\n", []string{"project: is required", "profile: is required"}},
		{"empty strings", "project: ''\nprofile: ''\n", []string{"project: is required", "profile: is required"}},
		{"null", "project: null\nprofile: ~\n", []string{"project: is required", "profile: is required"}},
		{"null document", "null\n", []string{"project: is required", "profile: is required"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, problems(t, tc.doc)); diff != "" {
				t.Errorf("Parse(%q) problems mismatch (-want +got):\n%s", tc.doc, diff)
			}
		})
	}
}

func TestValidateServers(t *testing.T) {
	bad := func(i int, v string) string {
		return fmt.Sprintf("servers[%d]: %q is not a valid server name (letters, digits, . _ -)", i, v)
	}
	tests := []fieldCase{
		{"none", "servers: []", nil},
		{"mixed case and punctuation", "servers: [GitHub, a.b_c-d, 9x]", nil},
		{"64 characters", "servers: [" + long64 + "]", nil},
		{"65 characters", "servers: [" + long65 + "]", []string{bad(0, long65)}},
		{"duplicate", "servers: [github, fetch, github]", []string{`servers[2]: "github" is declared twice`}},
		{"case differs is not a duplicate", "servers: [github, GitHub]", nil},
		{"not a list", "servers: github", []string{"line 3: cannot unmarshal !!str `github` into []string"}},
		{"map item", "servers: [{a: b}]", []string{"line 3: cannot unmarshal !!map into string"}},
	}
	for _, v := range []string{
		"", "-x", ".x", "a b", "a,b", "a/b", "docker.io/x", "a;b", "$(id)", "`id`", "a\nb", "a\x00b",
		"a%00", "../a", "a:b", "a'b", `a"b`, cyrillicA, fullwidth, zwj, rtl,
	} {
		tests = append(tests, fieldCase{fmt.Sprintf("%+q", v), fmt.Sprintf("servers: [ok, %q]", v), []string{bad(1, v)}})
	}
	runFieldCases(t, tests)
}

// remote returns a remote_servers entry named r with the given flow-mapping fields.
func remote(fields string) string { return "remote_servers: {r: {" + fields + "}}" }

func TestValidateRemoteServers(t *testing.T) {
	const url = `url: "https://mcp.example.com/mcp"`
	urlProblem := func(v, msg string) []string {
		return []string{fmt.Sprintf("remote_servers.r.url: %q %s", v, msg)}
	}
	tests := []fieldCase{
		{"minimal", remote(url), nil},
		{"every field", remote(url + `, transport: sse, description: "Search the web", ` +
			`headers: {Authorization: "Bearer ${API_TOKEN}", X-Api-Key: "${KEY}", Accept: "text/event-stream"}, ` +
			`secrets: [{name: search.token, env: API_TOKEN}, {name: key, env: KEY}]`), nil},
		{"url with port, path and query", remote(`url: "https://mcp.example.com:8443/v1/mcp?x=1&y=$(z)"`), nil},
		{"several remotes", `remote_servers: {a: {url: "https://a.example.com"}, B.c-d_e: {url: "https://b.example.com"}}`, nil},
		{"also in servers", "servers: [r]\n" + remote(url), []string{`remote_servers.r: "r" is also in servers`}},
		{"bad names", `remote_servers: {"a b": {url: "https://a.example.com"}, "$(id)": {url: "https://b.example.com"}, "` + cyrillicA + `": {url: "https://c.example.com"}}`,
			[]string{`remote_servers."$(id)": "$(id)" is not a valid server name`,
				`remote_servers."a b": "a b" is not a valid server name`,
				`remote_servers."d\u0435mo": "dеmo" is not a valid server name`}},
		{"null entry", "remote_servers: {r: }", []string{"remote_servers.r.url: is required"}},

		// url
		{"url missing", remote(`transport: sse`), []string{"remote_servers.r.url: is required"}},
		{"url http", remote(`url: "http://mcp.example.com"`), urlProblem("http://mcp.example.com", "is not an https URL")},
		{"url websocket", remote(`url: "wss://mcp.example.com"`), urlProblem("wss://mcp.example.com", "is not an https URL")},
		{"url without scheme", remote(`url: "mcp.example.com"`), urlProblem("mcp.example.com", "is not an https URL")},
		{"url opaque", remote(`url: "https:mcp.example.com"`), urlProblem("https:mcp.example.com", `has an invalid host: "" is empty`)},
		{"url credentials", remote(`url: "https://user:pw@mcp.example.com"`), urlProblem("https://user:pw@mcp.example.com", "carries credentials")},
		{"url space in host", remote(`url: "https://exa mple.com"`), urlProblem("https://exa mple.com", "is not a URL")},
		{"url space in path", remote(`url: "https://mcp.example.com/a b"`), urlProblem("https://mcp.example.com/a b", "contains a space, quote or backslash")},
		{"url quote", remote(`url: "https://mcp.example.com/a\"b"`), urlProblem(`https://mcp.example.com/a"b`, "contains a space, quote or backslash")},
		{"url single quote", remote(`url: "https://mcp.example.com/a'b"`), urlProblem("https://mcp.example.com/a'b", "contains a space, quote or backslash")},
		{"url backtick", remote("url: \"https://mcp.example.com/`id`\""), urlProblem("https://mcp.example.com/`id`", "contains a space, quote or backslash")},
		{"url backslash", remote(`url: "https://mcp.example.com/a\\b"`), urlProblem(`https://mcp.example.com/a\b`, "contains a space, quote or backslash")},
		{"url newline", remote(`url: "https://mcp.example.com/\n"`), []string{"remote_servers.r.url: contains a control character"}},
		{"url NUL", remote(`url: "https://mcp.example.com/\0"`), []string{"remote_servers.r.url: contains a control character"}},
		{"url encoded NUL", remote(`url: "https://mcp.example.com/%00"`), urlProblem("https://mcp.example.com/%00", "contains a %-encoded control character")},
		{"url IP host", remote(`url: "https://127.0.0.1/mcp"`), urlProblem("https://127.0.0.1/mcp", `has an invalid host: "127.0.0.1" is an IP address; egress is decided by name`)},
		{"url single label", remote(`url: "https://localhost/mcp"`), urlProblem("https://localhost/mcp", `has an invalid host: "localhost" is a single label, not a fully qualified host name`)},
		{"url bad port", remote(`url: "https://mcp.example.com:99999/"`), urlProblem("https://mcp.example.com:99999/", `has an invalid host: "mcp.example.com:99999" has port 99999 outside 1–65535`)},
		{"url cyrillic host", remote(`url: "https://mcp.ex` + "а" + `mple.com"`), []string{`remote_servers.r.url: contains a non-ASCII character 'а'`}},
		{"url fullwidth dot", remote(`url: "https://mcp．example.com"`), []string{`remote_servers.r.url: contains a non-ASCII character '．'`}},
		{"url zero-width joiner", remote(`url: "https://mcp.exa` + "\u200d" + `mple.com"`), []string{`remote_servers.r.url: contains a non-ASCII character '\u200d'`}},
		{"url RTL override", remote(`url: "https://mcp.example.com/` + "\u202e" + `"`), []string{`remote_servers.r.url: contains a non-ASCII character '\u202e'`}},
		{"url too long", remote(`url: "https://mcp.example.com/` + strings.Repeat("a", 2048) + `"`), []string{"remote_servers.r.url: is longer than 2048 characters"}},

		// transport
		{"transport streamable-http", remote(url + ", transport: streamable-http"), nil},
		{"transport unknown", remote(url + ", transport: websocket"), []string{`remote_servers.r.transport: "websocket" is not one of streamable-http, sse`}},
		{"transport case", remote(url + ", transport: SSE"), []string{`remote_servers.r.transport: "SSE" is not one of streamable-http, sse`}},
		{"transport newline", remote(url + `, transport: "sse\n"`), []string{`remote_servers.r.transport: "sse\n" is not one of streamable-http, sse`}},

		// description
		{"description 500", remote(url + ", description: " + strings.Repeat("d", 500)), nil},
		{"description 501", remote(url + ", description: " + strings.Repeat("d", 501)), []string{"remote_servers.r.description: is longer than 500 characters"}},
		{"description newline", remote(url + `, description: "a\nb"`), []string{"remote_servers.r.description: contains a control character"}},
		{"description escape", remote(url + `, description: "\e[2J"`), []string{"remote_servers.r.description: contains a control character"}},
		{"description cyrillic", remote(url + `, description: "` + cyrillicA + `"`), []string{"remote_servers.r.description: contains a non-ASCII character 'е'"}},
		{"description RTL", remote(url + `, description: "` + rtl + `"`), []string{`remote_servers.r.description: contains a non-ASCII character '\u202e'`}},
		{"description shell text is only text", remote(url + ", description: \"$(id); `id` '\\\"\""), nil},

		// secrets
		{"secret bad name and env", remote(url + `, secrets: [{name: "a b", env: "1X"}, {name: "$(id)", env: "A-B"}]`), []string{
			`remote_servers.r.secrets[0].name: "a b" is not a valid secret name`,
			`remote_servers.r.secrets[0].env: "1X" is not a valid environment variable name`,
			`remote_servers.r.secrets[1].name: "$(id)" is not a valid secret name`,
			`remote_servers.r.secrets[1].env: "A-B" is not a valid environment variable name`,
		}},
		{"secret empty", remote(url + `, secrets: [{}]`), []string{
			`remote_servers.r.secrets[0].name: "" is not a valid secret name`,
			`remote_servers.r.secrets[0].env: "" is not a valid environment variable name`,
		}},
		{"secret cyrillic env", remote(url + `, secrets: [{name: s, env: "TОKEN"}]`), []string{
			`remote_servers.r.secrets[0].env: "TОKEN" is not a valid environment variable name`,
		}},
		{"secret bare string", remote(url + `, secrets: [token]`), []string{"line 3: cannot unmarshal !!str `token` into manifest.SecretEnv"}},

		// headers
		{"header undeclared var", remote(url + `, headers: {Authorization: "Bearer ${TOKEN}"}`), []string{
			"remote_servers.r.headers.Authorization: ${TOKEN} is not a declared secret env",
		}},
		{"header bad names", remote(url + `, headers: {"X Bad": v, "X:Y": v, "X\nY": v, "-X": v}`), []string{
			`remote_servers.r.headers."-X": "-X" is not a valid header name`,
			`remote_servers.r.headers."X\nY": "X\nY" is not a valid header name`,
			`remote_servers.r.headers."X Bad": "X Bad" is not a valid header name`,
			`remote_servers.r.headers."X:Y": "X:Y" is not a valid header name`,
		}},
		{"header value newline", remote(url + `, headers: {X-A: "v\r\nInjected: 1"}`), []string{"remote_servers.r.headers.X-A: contains a control character"}},
		{"header value NUL", remote(url + `, headers: {X-A: "v\0"}`), []string{"remote_servers.r.headers.X-A: contains a control character"}},
		{"header value non-ASCII", remote(url + `, headers: {X-A: "` + zwj + `"}`), []string{`remote_servers.r.headers.X-A: contains a non-ASCII character '\u200d'`}},
		{"header value too long", remote(url + `, headers: {X-A: "` + strings.Repeat("v", 4097) + `"}`), []string{"remote_servers.r.headers.X-A: is longer than 4096 characters"}},
		{"header value shell text is only text", remote(url + ", headers: {X-A: \"$(id);`id`'\"}"), nil},
	}
	runFieldCases(t, tests)
}

func TestValidateTools(t *testing.T) {
	const decl = "servers: [github]\nremote_servers: {search: {url: \"https://search.example.com\"}}\n"
	tests := []fieldCase{
		{"server and remote", decl + "tools: {github: [get_issue, list.prs, _private, x-y], search: [web]}", nil},
		{"undeclared", decl + "tools: {fetch: [get]}", []string{`tools.fetch: "fetch" is not a declared server`}},
		{"undeclared hostile key", decl + `tools: {"$(id)": [get], "a\nb": [x]}`, []string{
			`tools."$(id)": "$(id)" is not a declared server`,
			`tools."a\nb": "a\nb" is not a declared server`,
		}},
		{"empty list", decl + "tools: {github: []}", []string{"tools.github: is an empty list"}},
		{"null list", decl + "tools: {github: }", []string{"tools.github: is an empty list"}},
		{"duplicate", decl + "tools: {github: [a, b, a]}", []string{`tools.github[2]: "a" is listed twice`}},
		{"wildcard is not a tool", decl + `tools: {github: ["*"]}`, []string{`tools.github[0]: "*" is not a valid tool name`}},
	}
	for _, v := range []string{"", "a b", "-x", ".x", "a/b", "a;b", "$(id)", "`id`", "a\nb", "a\x00b", "../x", cyrillicA, zwj, rtl, strings.Repeat("t", 129)} {
		tests = append(tests, fieldCase{fmt.Sprintf("tool %+.20q", v), decl + fmt.Sprintf("tools: {github: [ok, %q]}", v),
			[]string{fmt.Sprintf("tools.github[1]: %q is not a valid tool name", v)}})
	}
	runFieldCases(t, tests)
}

func TestValidateServerNetwork(t *testing.T) {
	const decl = "servers: [github, fetch]\nremote_servers: {search: {url: \"https://search.example.com\"}}\n"
	runFieldCases(t, []fieldCase{
		{"shared and none", decl + "server_network: {github: shared, fetch: none}", nil},
		{"unknown value", decl + "server_network: {github: host}", []string{`server_network.github: "host" is not one of shared, none`}},
		{"case", decl + "server_network: {github: None}", []string{`server_network.github: "None" is not one of shared, none`}},
		{"empty", decl + "server_network: {github: ''}", []string{`server_network.github: "" is not one of shared, none`}},
		{"hostile value", decl + `server_network: {github: "none\n--network=host"}`, []string{`server_network.github: "none\n--network=host" is not one of shared, none`}},
		{"remote server", decl + "server_network: {search: none}", []string{`server_network.search: "search" is a remote server; its network is not abox's to set`}},
		{"undeclared", decl + "server_network: {other: none}", []string{`server_network.other: "other" is not a declared server`}},
		{"undeclared and bad", decl + `server_network: {"a b": bridge}`, []string{
			`server_network."a b": "bridge" is not one of shared, none`,
			`server_network."a b": "a b" is not a declared server`,
		}},
	})
}

func TestValidateToolchains(t *testing.T) {
	runFieldCases(t, []fieldCase{
		{"all installable", "toolchains: [" + strings.Join(Installable(), ", ") + "]", nil},
		{"known, not installable", "toolchains: [go, dotnet]", []string{`toolchains[1]: abox cannot install dotnet: .NET is not in the Debian archive abox installs toolchains from`}},
		{"unknown", "toolchains: [go, perl]", []string{`toolchains[1]: "perl" is not a known toolchain`}},
		{"case", "toolchains: [Go]", []string{`toolchains[0]: "Go" is not a known toolchain`}},
		{"duplicate", "toolchains: [go, node, go]", []string{`toolchains[2]: "go" is listed twice`}},
		{"hostile", `toolchains: ["go; curl x|sh", "g` + "о" + `"]`, []string{
			`toolchains[0]: "go; curl x|sh" is not a known toolchain`,
			`toolchains[1]: "gо" is not a known toolchain`,
		}},
	})
}

func TestValidateMountGlobs(t *testing.T) {
	for _, field := range []string{"mask", "watch"} {
		t.Run(field, func(t *testing.T) {
			set := func(v ...string) string { return "mounts: {" + field + ": " + flowList(v) + "}" }
			loc := "mounts." + field + "[0]: "
			tests := []fieldCase{
				{"globs", set(".env*", ".git/hooks", "a/**/b.txt", "*.code-workspace", "dir/", "./x", "a..b", "...", "x/.../y", "a b", "a;b", "(x)"), nil},
				{"empty", set(""), []string{loc + "is empty"}},
				{"absolute", set("/etc/passwd"), []string{loc + `"/etc/passwd" is absolute; write it relative to the workspace`}},
				{"parent", set("../x"), []string{loc + `"../x" leaves the workspace`}},
				{"parent inside", set("a/../../x"), []string{loc + `"a/../../x" leaves the workspace`}},
				{"only parent", set(".."), []string{loc + `".." leaves the workspace`}},
				{"trailing parent", set("a/.."), []string{loc + `"a/.." leaves the workspace`}},
				{"double quote", set(`a"b`), []string{loc + `"a\"b" contains a quote, backslash or $`}},
				{"single quote", set("a'b"), []string{loc + `"a'b" contains a quote, backslash or $`}},
				{"backtick", set("`id`"), []string{loc + "\"`id`\" contains a quote, backslash or $"}},
				{"command substitution", set("$(id)"), []string{loc + `"$(id)" contains a quote, backslash or $`}},
				{"backslash", set(`a\b`), []string{loc + `"a\\b" contains a quote, backslash or $`}},
				{"newline", set("a\nb"), []string{loc + "contains a control character"}},
				{"NUL", set("a\x00b"), []string{loc + "contains a control character"}},
				{"tab", set("a\tb"), []string{loc + "contains a control character"}},
				{"cyrillic", set(cyrillicA), []string{loc + "contains a non-ASCII character 'е'"}},
				{"fullwidth dot", set(fullwidth), []string{loc + "contains a non-ASCII character '．'"}},
				{"zero-width joiner", set(zwj), []string{loc + `contains a non-ASCII character '\u200d'`}},
				{"RTL override", set(rtl), []string{loc + `contains a non-ASCII character '\u202e'`}},
				{"1024 characters", set(strings.Repeat("a", 1024)), nil},
				{"1025 characters", set(strings.Repeat("a", 1025)), []string{loc + "is longer than 1024 characters"}},
				{"percent is only text", set("a%00b"), nil},
				{"every problem", set("/a", "../b", "ok", "$c"), []string{
					loc + `"/a" is absolute; write it relative to the workspace`,
					"mounts." + field + `[1]: "../b" leaves the workspace`,
					"mounts." + field + `[3]: "$c" contains a quote, backslash or $`,
				}},
			}
			runFieldCases(t, tests)
		})
	}
}

func TestValidateMountContext(t *testing.T) {
	set := func(v ...string) string { return "mounts: {context: " + flowList(v) + "}" }
	const loc = "mounts.context[0]: "
	runFieldCases(t, []fieldCase{
		{"absolute and home", set("/srv/docs", "~", "~/notes", "/", "/a/../b", "/with space", "/a,readonly=false"), nil},
		{"relative", set("docs"), []string{loc + `"docs" is not absolute`}},
		{"dot relative", set("./docs"), []string{loc + `"./docs" is not absolute`}},
		{"parent", set("../docs"), []string{loc + `"../docs" is not absolute`}},
		{"other user's home", set("~root/.ssh"), []string{loc + `"~root/.ssh" is not absolute`}},
		{"empty", set(""), []string{loc + `"" is not absolute`}},
		{"double quote", set(`/a"b`), []string{loc + `"/a\"b" contains a quote, backslash or $`}},
		{"command substitution", set("/$(id)"), []string{loc + `"/$(id)" contains a quote, backslash or $`}},
		{"backtick", set("/`id`"), []string{loc + "\"/`id`\" contains a quote, backslash or $"}},
		{"relative and quoted", set("a'b"), []string{loc + `"a'b" is not absolute`, loc + `"a'b" contains a quote, backslash or $`}},
		{"newline", set("/a\nb"), []string{loc + "contains a control character"}},
		{"NUL", set("/a\x00"), []string{loc + "contains a control character"}},
		{"cyrillic", set("/" + cyrillicA), []string{loc + "contains a non-ASCII character 'е'"}},
		{"RTL override", set("/" + rtl), []string{loc + `contains a non-ASCII character '\u202e'`}},
		{"too long", set("/" + strings.Repeat("a", 1024)), []string{loc + "is longer than 1024 characters"}},
	})
}

func TestValidateEgress(t *testing.T) {
	for _, field := range []string{"egress", "egress_ignored"} {
		t.Run(field, func(t *testing.T) {
			set := func(v ...string) string { return field + ": " + flowList(v) }
			loc := func(i int) string { return fmt.Sprintf("%s[%d]: ", field, i) }
			runFieldCases(t, []fieldCase{
				{"entries", set("example.com", "*.example.org", "github.com:22", "Example.NET.", "xn--80ak6aa92e.com"), nil},
				{"duplicates are allowed", set("a.example.com", "A.example.com."), nil},
				{"located", set("a.example.com", "b.example.com", "exa mple.com"), []string{
					loc(2) + `"exa mple.com" is not a host name: it contains a space or control character`,
				}},
				{"URL", set("https://example.com/x"), []string{loc(0) + `"https://example.com/x" is a URL, not a host name`}},
				{"path", set("example.com/x"), []string{loc(0) + `"example.com/x" is not a host name: it contains a path, query or user part`}},
				{"IP", set("10.0.0.1"), []string{loc(0) + `"10.0.0.1" is an IP address; egress is decided by name`}},
				{"single label", set("localhost"), []string{loc(0) + `"localhost" is a single label, not a fully qualified host name`}},
				{"inner wildcard", set("a.*.com"), []string{loc(0) + `"a.*.com" has a wildcard that is not a leading "*."`}},
				{"bad port", set("example.com:0"), []string{loc(0) + `"example.com:0" has port 0 outside 1–65535`}},
				{"empty", set(""), []string{loc(0) + `"" is empty`}},
				{"command substitution", set("$(id).example.com"), []string{loc(0) + `"$(id).example.com" is not a host name: "$" is not allowed`}},
				{"backtick", set("`id`.example.com"), []string{loc(0) + "\"`id`.example.com\" is not a host name: \"`\" is not allowed"}},
				{"semicolon", set("a.com;b.com"), []string{loc(0) + `"a.com;b.com" is not a host name: ";" is not allowed`}},
				{"quote", set(`a"b.com`), []string{loc(0) + `"a\"b.com" is not a host name: "\"" is not allowed`}},
				{"parent", set("../example.com"), []string{loc(0) + `"../example.com" is not a host name: it contains a path, query or user part`}},
				{"percent NUL", set("example.com%00"), []string{loc(0) + `"example.com%00" is not a host name: "%" is not allowed`}},
				{"NUL", set("example.com\x00"), []string{loc(0) + `"example.com\x00" is not a host name: it contains a space or control character`}},
				{"newline", set("example.com\nevil.com"), []string{loc(0) + `"example.com\nevil.com" is not a host name: it contains a space or control character`}},
				{"cyrillic", set("ex\u0430mple.com"), []string{loc(0) + `"ex\u0430mple.com" is not ASCII`}},
				{"fullwidth dot", set("example\uff0ecom"), []string{loc(0) + `"example\uff0ecom" is not ASCII`}},
				{"zero-width joiner", set("exa\u200dmple.com"), []string{loc(0) + `"exa\u200dmple.com" is not ASCII`}},
				{"RTL override", set("\u202emoc.elpmaxe"), []string{loc(0) + `"\u202emoc.elpmaxe" is not ASCII`}},
				{"very long", set(strings.Repeat("a.", 5000) + "com"), []string{loc(0) + `"` + strings.Repeat("a.", 5000) + `com" is longer than a host name can be`}},
				{"every problem", set("ok.example.com", "bad host", "also.ok.example.com", "*.com", "1.2.3.4"), []string{
					loc(1) + `"bad host" is not a host name: it contains a space or control character`,
					loc(3) + `"*.com" is too broad: a wildcard needs a domain of at least two labels`,
					loc(4) + `"1.2.3.4" is an IP address; egress is decided by name`,
				}},
			})
		})
	}
}

func TestValidateEgressIgnoredOverlap(t *testing.T) {
	runFieldCases(t, []fieldCase{
		{"disjoint", "egress: [a.example.com]\negress_ignored: [b.example.com, '*.a.example.com', 'a.example.com:22']", nil},
		{"same entry in another spelling", "egress: [a.example.com, b.example.com]\negress_ignored: [c.example.com, B.Example.COM.]", []string{
			`egress_ignored[1]: "B.Example.COM." is both allowed and ignored`,
		}},
	})
}

// TestValidateEgressLarge: a 10 000-entry allowlist validates, and one bad entry in it is
// reported at its index. There is no timing assertion; the test's own timeout bounds it.
func TestValidateEgressLarge(t *testing.T) {
	hosts := repeatf(10000, "host-%d.example.com")
	if got := problems(t, base+"egress: "+flowList(hosts)+"\n"); got != nil {
		t.Fatalf("10 000 valid entries: problems = %q", got)
	}
	m, err := Parse([]byte(base+"egress: "+flowList(hosts)+"\n"), FileName)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Egress) != 10000 || m.Egress[9999] != "host-9999.example.com" {
		t.Errorf("Parse() kept %d entries, last %q", len(m.Egress), m.Egress[len(m.Egress)-1])
	}
	hosts[7777] = "host 7777.example.com"
	want := []string{`egress[7777]: "host 7777.example.com" is not a host name: it contains a space or control character`}
	if diff := cmp.Diff(want, problems(t, base+"egress: "+flowList(hosts)+"\n")); diff != "" {
		t.Errorf("problems mismatch (-want +got):\n%s", diff)
	}
	exactly := repeatf(MaxListLen, "h%d.example.com")
	if got := problems(t, base+"egress: "+flowList(exactly)+"\n"); got != nil {
		t.Errorf("MaxListLen entries: problems = %q", got)
	}
}

func TestValidateEnvSecrets(t *testing.T) {
	runFieldCases(t, []fieldCase{
		{"valid", "env_secrets: {GITHUB_TOKEN: github.token, _X: a-b_c.d, lower: X9}", nil},
		{"bad env names", `env_secrets: {"1X": s, "A-B": s, "A B": s, "": s, "TОKEN": s}`, []string{
			`env_secrets."": "" is not a valid environment variable name`,
			`env_secrets.1X: "1X" is not a valid environment variable name`,
			`env_secrets."A B": "A B" is not a valid environment variable name`,
			`env_secrets.A-B: "A-B" is not a valid environment variable name`,
			`env_secrets."T\u041eKEN": "TОKEN" is not a valid environment variable name`,
		}},
		{"reserved", "env_secrets: {PATH: s, HOME: s, LD_PRELOAD: s, CLAUDE_CONFIG_DIR: s, ABOX_PROJECT: s, ABOX_GATEWAY_URL: s, ABOX_RUN_LOG_DIR: s}", []string{
			`env_secrets.ABOX_GATEWAY_URL: "ABOX_GATEWAY_URL" is set by abox itself and cannot carry a secret`,
			`env_secrets.ABOX_PROJECT: "ABOX_PROJECT" is set by abox itself and cannot carry a secret`,
			`env_secrets.ABOX_RUN_LOG_DIR: "ABOX_RUN_LOG_DIR" is set by abox itself and cannot carry a secret`,
			`env_secrets.CLAUDE_CONFIG_DIR: "CLAUDE_CONFIG_DIR" is set by abox itself and cannot carry a secret`,
			`env_secrets.HOME: "HOME" is set by abox itself and cannot carry a secret`,
			`env_secrets.LD_PRELOAD: "LD_PRELOAD" is set by abox itself and cannot carry a secret`,
			`env_secrets.PATH: "PATH" is set by abox itself and cannot carry a secret`,
		}},
		{"bad secret names", `env_secrets: {A: "a b", B: "-x", C: "$(id)", D: "x\ny", E: "", F: "` + cyrillicA + `", G: "../x"}`, []string{
			`env_secrets.A: "a b" is not a valid secret name`,
			`env_secrets.B: "-x" is not a valid secret name`,
			`env_secrets.C: "$(id)" is not a valid secret name`,
			`env_secrets.D: "x\ny" is not a valid secret name`,
			`env_secrets.E: "" is not a valid secret name`,
			`env_secrets.F: "dеmo" is not a valid secret name`,
			`env_secrets.G: "../x" is not a valid secret name`,
		}},
		{"bad name and secret", `env_secrets: {"A;B": "a;b"}`, []string{
			`env_secrets."A;B": "A;B" is not a valid environment variable name`,
			`env_secrets."A;B": "a;b" is not a valid secret name`,
		}},
		{"not a map", "env_secrets: [A]", []string{"line 3: cannot unmarshal !!seq into map[string]string"}},
	})
}

func TestValidateRun(t *testing.T) {
	tests := []fieldCase{
		{"defaults", "run: {}", nil},
		{"output and connectors", "run: {output: text, connectors: true}", nil},
		{"json", "run: {output: json}", nil},
		{"timeout bounds", "run: {timeout: 30}", nil},
		{"timeout max", "run: {timeout: 86400}", nil},
		{"timeout too short", "run: {timeout: 29}", []string{"run.timeout: 29 is outside 30–86400 seconds"}},
		{"timeout too long", "run: {timeout: 86401}", []string{"run.timeout: 86401 is outside 30–86400 seconds"}},
		{"timeout negative", "run: {timeout: -5}", []string{"run.timeout: -5 is outside 30–86400 seconds"}},
		{"timeout text", "run: {timeout: 1h}", []string{"line 3: cannot unmarshal !!str `1h` into int"}},
		{"timeout overflow", "run: {timeout: 99999999999999999999}", []string{"line 3: cannot unmarshal !!float `9999999...` into int"}},
		{"connectors text", "run: {connectors: maybe}", []string{"line 3: cannot unmarshal !!str `maybe` into bool"}},
		{"output unknown", "run: {output: xml}", []string{`run.output: "xml" is not one of stream-json, json, text`}},
		{"output hostile", `run: {output: "text --dangerously-skip-permissions"}`, []string{`run.output: "text --dangerously-skip-permissions" is not one of stream-json, json, text`}},
		{"on_exec_change warn", "run: {on_exec_change: warn}", nil},
		{"on_exec_change fail", "run: {on_exec_change: fail}", nil},
		{"on_exec_change unknown", "run: {on_exec_change: ignore}", []string{`run.on_exec_change: "ignore" is not one of warn, fail`}},
		{"on_exec_change case", "run: {on_exec_change: Fail}", []string{`run.on_exec_change: "Fail" is not one of warn, fail`}},
		{"runtime runc", "run: {runtime: runc}", nil},
		{"runtime runsc", "run: {runtime: runsc}", nil},
		{"runtime unknown", "run: {runtime: kata}", []string{`run.runtime: "kata" is not one of runc, runsc`}},
		{"runtime hostile", `run: {runtime: "runsc --privileged"}`, []string{`run.runtime: "runsc --privileged" is not one of runc, runsc`}},
		{"workspace isolated", "run: {workspace: isolated}", nil},
		{"caches", "mounts: {caches: [npm, go, pip, cargo]}", nil},
		{"cache unknown", "mounts: {caches: [maven]}", []string{`mounts.caches[0]: "maven" is not one of npm, go, pip, cargo`}},
		{"cache twice", "mounts: {caches: [npm, npm]}", []string{`mounts.caches[1]: "npm" is listed twice`}},
		{"workspace live", "run: {workspace: live}", nil},
		{"workspace unknown", "run: {workspace: clone}", []string{`run.workspace: "clone" is not one of live, isolated`}},
		{"runtime case", "run: {runtime: RunSC}", []string{`run.runtime: "RunSC" is not one of runc, runsc`}},
		{"every problem", "run: {permission_mode: yolo, output: xml, timeout: 1}", []string{
			`run.permission_mode: "yolo" is not one of default, acceptEdits, bypassPermissions, plan`,
			`run.output: "xml" is not one of stream-json, json, text`,
			"run.timeout: 1 is outside 30–86400 seconds",
		}},
	}
	for _, mode := range PermissionModes {
		tests = append(tests, fieldCase{"mode " + mode, "run: {permission_mode: " + mode + "}", nil})
	}
	for _, mode := range []string{"BypassPermissions", "bypass", "", "plan\n", "plan; rm -rf /", cyrillicA} {
		tests = append(tests, fieldCase{fmt.Sprintf("mode %+q", mode), fmt.Sprintf("run: {permission_mode: %q}", mode), nil})
		if mode != "" {
			tests[len(tests)-1].want = []string{fmt.Sprintf("run.permission_mode: %q is not one of default, acceptEdits, bypassPermissions, plan", mode)}
		}
	}
	runFieldCases(t, tests)
}
