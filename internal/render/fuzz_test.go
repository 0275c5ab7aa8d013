package render_test

import (
	"maps"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"

	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/render"
)

// fuzzSep separates the items of a fuzzed list field. It is a control character, which every
// manifest field refuses anyway, so no accepted item is lost by splitting on it.
const fuzzSep = "\x1e"

func fuzzList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, fuzzSep)
}

// fuzzInput is one fuzzed manifest plus the host-side inputs that reach a rendered file.
type fuzzInput struct {
	project, profile                         string
	egress, servers, masks, context, tools   string // lists, split on fuzzSep
	remoteName, remoteURL, header, headerVal string
	secretName, secretEnv                    string
	envSecret, envSecretName                 string
	serverNetwork, permission, output        string
	connectors                               bool
	source                                   uint8 // claude_code.source: native, npm, file
	npmRegistry, agentEnv                    string
}

func (in fuzzInput) manifestYAML() ([]byte, error) {
	m := manifest.Manifest{
		Version: 1, Project: in.project, Profile: in.profile,
		Servers: fuzzList(in.servers), Egress: fuzzList(in.egress),
		Mounts: manifest.Mounts{Mask: fuzzList(in.masks), Watch: fuzzList(in.masks), Context: fuzzList(in.context)},
		Run:    manifest.Run{PermissionMode: in.permission, Output: in.output, Connectors: in.connectors},
	}
	if in.remoteName != "" {
		r := manifest.RemoteServer{URL: in.remoteURL}
		if in.header != "" {
			r.Headers = map[string]string{in.header: in.headerVal}
		}
		if in.secretName != "" {
			r.Secrets = []manifest.SecretEnv{{Name: in.secretName, Env: in.secretEnv}}
		}
		m.RemoteServers = map[string]manifest.RemoteServer{in.remoteName: r}
	}
	if len(m.Servers) > 0 {
		if t := fuzzList(in.tools); t != nil {
			m.Tools = map[string][]string{m.Servers[0]: t}
			// netd can enforce narrowing only when every server's tools are known: a remote
			// server's tools are not, so it is narrowed too.
			if in.remoteName != "" && manifest.IsServerName(in.remoteName) {
				m.Tools[in.remoteName] = []string{"resolve-library-id"}
			}
		}
		if in.serverNetwork != "" {
			m.ServerNetwork = map[string]string{m.Servers[0]: in.serverNetwork}
		}
	}
	if in.envSecret != "" {
		m.EnvSecrets = map[string]string{in.envSecret: in.envSecretName}
	}
	return yaml.Marshal(m)
}

// spec validates the input as abox would (manifest.Parse, config.Validate) and builds the Spec.
func (in fuzzInput) spec() (render.Spec, error) {
	data, err := in.manifestYAML()
	if err != nil {
		return render.Spec{}, err
	}
	m, err := manifest.Parse(data, manifest.FileName)
	if err != nil {
		return render.Spec{}, err
	}
	cfg := in.config()
	if err := cfg.Validate("config.yaml"); err != nil {
		return render.Spec{}, err
	}
	return render.Spec{
		Version: testVersion, Manifest: m, Config: cfg, Paths: testPaths,
		Project: testPaths.Project(testWorkspace), Home: testHome,
		Custom: fuzzCustom, Catalog: fuzzCatalog, NPMRegistry: in.npmRegistry,
	}, nil
}

func (in fuzzInput) config() *config.Config {
	c := config.Default()
	c.Profiles[in.profile] = config.Profile{Port: 8899}
	c.AgentEnv["FUZZ_VALUE"] = in.agentEnv
	c.ClaudeCode.SHA256 = strings.Repeat("a", 64)
	switch in.source % 3 {
	case 1:
		c.ClaudeCode.Source = config.SourceNPM
	case 2:
		c.ClaudeCode.Source, c.ClaudeCode.Path = config.SourceFile, "/opt/claude"
	}
	return c
}

var fuzzCatalog = fakeCatalog{
	"github": {"image": "mcp/github@sha256:" + strings.Repeat("3", 64), "allowHosts": []any{"api.github.com:443"},
		"tools": []any{map[string]any{"name": "get_issue"}, map[string]any{"name": "delete_repo"}}},
	"remote-cat": {"type": "remote", "remote": map[string]any{"url": "https://r.example.test/mcp"}},
}

var fuzzCustom = config.CustomServers{
	"notes": {Image: "registry.example.test/notes@sha256:" + strings.Repeat("1", 64), Tools: []string{"search"}},
	"fetch": {Image: "registry.example.test/fetch@sha256:" + strings.Repeat("2", 64), Tools: []string{"fetch"}},
}

// fuzzSeeds are the seeds beyond testdata/fuzz: the first two (minimal and full) must render.
func fuzzSeeds() []fuzzInput {
	full := fuzzInput{
		project: "full.proj_1", profile: "work",
		egress:  strings.Join([]string{"example.com", "*.example.org", "github.com:22", "*.internal.example.net:8443", "EXAMPLE.com"}, fuzzSep),
		servers: "github" + fuzzSep + "notes" + fuzzSep + "fetch", masks: ".env*" + fuzzSep + "secrets/",
		context: "~/notes/dev" + fuzzSep + "/srv/a,b" + fuzzSep + "/opt/with space/x" + fuzzSep + "~/notes/dev/",
		tools:   "get_issue", remoteName: "context7", remoteURL: "https://mcp.context7.example.test/mcp",
		header: "Authorization", headerVal: "Bearer ${CONTEXT7_TOKEN}", secretName: "context7.token", secretEnv: "CONTEXT7_TOKEN",
		envSecret: "GITHUB_TOKEN", envSecretName: "github.token", serverNetwork: "none",
		permission: "bypassPermissions", output: "stream-json", connectors: true,
		npmRegistry: "https://registry.example.test/", agentEnv: "1",
	}
	seeds := []fuzzInput{
		{project: "minimal", profile: "default"},
		full,
	}
	npm := full
	npm.source = 1
	seeds = append(seeds, npm)
	file := full
	file.source, file.output = 2, "text"
	seeds = append(seeds, file)
	// Injection attempts that validation must refuse or rendering must neutralise.
	for _, s := range []string{
		"x\nRUN curl evil", "x\\\nRUN id", "x\"; id; \"", "$(id)", "a,readonly=false", "\"quoted\"",
		"type=bind,source=/", "x\r\nUSER root", "${HOME}", "`id`", "x'y", "a b", "\u2028",
	} {
		in := full
		in.project, in.egress, in.context, in.masks = s, s, "/srv/"+s, s
		seeds = append(seeds, in)
		in = full
		in.context, in.remoteURL, in.headerVal, in.npmRegistry, in.agentEnv = "/srv/"+s, "https://x.example.test/"+s, s, "https://r.example.test/"+s, s
		seeds = append(seeds, in)
	}
	return seeds
}

func addFuzzSeeds(f *testing.F) {
	for _, in := range fuzzSeeds() {
		f.Add(in.project, in.profile, in.egress, in.servers, in.masks, in.context, in.tools,
			in.remoteName, in.remoteURL, in.header, in.headerVal, in.secretName, in.secretEnv,
			in.envSecret, in.envSecretName, in.serverNetwork, in.permission, in.output, in.connectors,
			in.source, in.npmRegistry, in.agentEnv)
	}
}

// TestFuzzSeedsRender keeps the fuzz target honest: its main seeds pass validation and render,
// so the fuzzer starts from inputs that reach every artifact.
func TestFuzzSeedsRender(t *testing.T) {
	for i, in := range fuzzSeeds()[:4] {
		s, err := in.spec()
		if err != nil {
			t.Fatalf("seed %d: %v", i, err)
		}
		mustRender(t, s)
	}
}

// FuzzRender builds a manifest from fuzzed fields and, when validation accepts it, requires
// every rendered artifact to stay inside its grammar: JSON and YAML decode, each Dockerfile has
// exactly the instructions of an unfuzzed baseline, netd.json passes policy.Parse, every argv
// element is one newline-free element, every --mount parses back to the expected fields, and the
// sandbox invariants hold.
func FuzzRender(f *testing.F) {
	addFuzzSeeds(f)
	f.Fuzz(func(t *testing.T, project, profile, egress, servers, masks, context, tools,
		remoteName, remoteURL, header, headerVal, secretName, secretEnv,
		envSecret, envSecretName, serverNetwork, permission, output string, connectors bool,
		source uint8, npmRegistry, agentEnv string) {
		in := fuzzInput{project, profile, egress, servers, masks, context, tools,
			remoteName, remoteURL, header, headerVal, secretName, secretEnv,
			envSecret, envSecretName, serverNetwork, permission, output, connectors,
			source, npmRegistry, agentEnv}
		s, err := in.spec()
		if err != nil {
			return // validation refused the input
		}
		arts, err := render.Render(s)
		if err != nil {
			checkRenderRefusal(t, s, err)
			return
		}
		checkArtifactGrammar(t, arts)
		checkSameInstructions(t, s, arts)
		rs := runSpecOf(t, arts)
		checkAgentArgv(t, rs)
		checkNetdArgv(t, rs)
		checkNoDockerSocket(t, arts)
		checkMCPJSON(t, arts, s.Manifest)
		checkSettings(t, arts, s.Config.RTK.Enabled, s.Config.ClaudeCode.Injected())
		checkIndex(t, arts)
		checkCompose(t, arts, rs)
		checkNetdPolicy(t, arts, s.Manifest)
		checkContextMounts(t, rs, s.Manifest)
		checkReviewCopy(t, arts)
		checkClaudeArgs(t, rs, s.Manifest)
	})
}

// checkRenderRefusal accepts only the refusals Render documents for a validated manifest.
func checkRenderRefusal(t *testing.T, s render.Spec, err error) {
	t.Helper()
	msg := err.Error()
	switch {
	case s.Config.ClaudeCode.Source == config.SourceNPM && strings.Contains(msg, "npm registry"):
	case slices.Contains(s.Manifest.Toolchains, "dotnet"):
	case strings.Contains(msg, "mounts.context[") && (strings.Contains(msg, "overlaps") || strings.Contains(msg, "Docker socket")):
	case strings.Contains(msg, "narrowing cannot be enforced"):
	case strings.Contains(msg, "server_network.") && slices.Contains(slices.Collect(maps.Values(s.Manifest.ServerNetwork)), "none"):
	default:
		t.Fatalf("Render refused a validated manifest: %v", err)
	}
}

// checkSameInstructions requires both Dockerfiles to hold the instructions of a baseline
// rendered from a fixed manifest with the same configuration: no fuzzed value may add one.
func checkSameInstructions(t *testing.T, s render.Spec, arts []render.Artifact) {
	t.Helper()
	base := s
	bm, err := manifest.Parse([]byte("project: baseline\nprofile: default\n"), manifest.FileName)
	if err != nil {
		t.Fatal(err)
	}
	base.Manifest = bm
	baseArts := mustRender(t, base)
	for _, df := range []string{render.AgentDockerfile, render.NetdDockerfile} {
		want, err := dockerfileInstructionList(artifactData(t, baseArts, df))
		if err != nil {
			t.Fatal(err)
		}
		got, err := dockerfileInstructionList(artifactData(t, arts, df))
		if err != nil {
			t.Fatalf("%s: %v", df, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s instructions differ from the baseline (-baseline +fuzzed):\n%s\n%s", df, diff, artifactData(t, arts, df))
		}
	}
}

// checkContextMounts requires the agent's context --mount values to parse back to exactly the
// manifest's directories, in order, each read-only under /context.
func checkContextMounts(t *testing.T, rs render.RunSpec, m *manifest.Manifest) {
	t.Helper()
	var want []string
	for _, p := range m.Mounts.Context {
		if p == "~" || strings.HasPrefix(p, "~/") {
			p = testHome + p[1:]
		}
		if p = path.Clean(p); !slices.Contains(want, p) {
			want = append(want, p)
		}
	}
	var got []string
	for _, arg := range flagValues(rs.Agent.Args, "--mount") {
		f, err := mountFields(arg)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(f["target"], render.ContextRoot+"/") {
			continue
		}
		if f["type"] != "bind" || f["readonly"] != "true" || len(f) != 4 || strings.Count(f["target"], "/") != 2 {
			t.Errorf("context --mount %q parses to %q", arg, f)
		}
		got = append(got, f["source"])
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("context mount sources (-want +got):\n%s", diff)
	}
}
