package render_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/render"
)

// TestInvariants checks, for every case, the properties that make the sandbox a sandbox,
// whatever the manifest says.
func TestInvariants(t *testing.T) {
	for _, name := range caseNames(t) {
		t.Run(name, func(t *testing.T) {
			s := loadSpec(t, name)
			arts := mustRender(t, s)
			checkArtifactGrammar(t, arts)
			rs := runSpecOf(t, arts)
			checkAgentArgv(t, rs)
			checkNetdArgv(t, rs)
			checkNetdLogsApart(t, rs)
			checkLoginArgv(t, rs)
			checkNoDockerSocket(t, arts)
			checkMCPJSON(t, arts, s.Manifest)
			checkSettings(t, arts, s.Config.RTK.Enabled, s.Config.ClaudeCode.Injected())
			checkIndex(t, arts)
			checkCompose(t, arts, rs)
			checkNetdPolicy(t, arts, s.Manifest)
			checkReviewCopy(t, arts)
			checkClaudeArgs(t, rs, s.Manifest)
			checkCredential(t, rs, arts, s)
		})
	}
}

// checkReviewCopy requires the review copy to be exactly the marker, the compose file and
// copies of the authoritative Dockerfiles and ruleset, which is the constant policy.Ruleset.
func checkReviewCopy(t *testing.T, arts []render.Artifact) {
	t.Helper()
	am := artifactMap(arts)
	var review []string
	for _, a := range arts {
		if a.Review {
			review = append(review, a.Name)
			if a.Mode != 0o644 {
				t.Errorf("review %s has mode %v", a.Name, a.Mode)
			}
		} else if a.Mode != 0o444 {
			t.Errorf("%s has mode %v", a.Name, a.Mode)
		}
	}
	slices.Sort(review)
	want := []string{render.ReviewMarker, render.AgentDockerfile, render.ComposeFile, render.NetdDockerfile, policy.RulesFile, policy.QueueFile}
	slices.Sort(want)
	if !slices.Equal(review, want) {
		t.Errorf("review artifacts %q, want %q", review, want)
	}
	for review, auth := range map[string]string{
		render.AgentDockerfile: render.AgentDockerfile, render.NetdDockerfile: render.NetdDockerfile,
		policy.RulesFile: render.NetdDir + "/" + policy.RulesFile,
	} {
		if string(am[render.ReviewDir+"/"+review].Data) != string(am[auth].Data) {
			t.Errorf("review %s differs from %s", review, auth)
		}
	}
	if string(am[render.NetdDir+"/"+policy.RulesFile].Data) != string(policy.Ruleset(policy.NetdUID)) {
		t.Error("netpolicy.nft is not policy.Ruleset(policy.NetdUID)")
	}
}

// checkClaudeArgs requires claude to read its settings and MCP configuration from the read-only
// artifacts mount, and to ignore every other MCP configuration unless connectors are on.
func checkClaudeArgs(t *testing.T, rs render.RunSpec, m *manifest.Manifest) {
	t.Helper()
	c := rs.Agent.Command
	for flag, want := range map[string]string{"--settings": render.AgentArtifacts + "/settings.json",
		"--mcp-config": render.AgentArtifacts + "/mcp.json", "--permission-mode": m.Run.PermissionMode} {
		if v := flagValues(c, flag); len(v) != 1 || v[0] != want {
			t.Errorf("claude %s = %q, want %s", flag, v, want)
		}
	}
	if slices.Contains(c, "--strict-mcp-config") == m.Run.Connectors {
		t.Errorf("claude command %q with connectors %v", c, m.Run.Connectors)
	}
	if rs.Permission != m.Run.PermissionMode || rs.Connectors != m.Run.Connectors || rs.MCPEndpoint != fmt.Sprintf("http://127.0.0.1:%d/mcp", policy.MCPPort) {
		t.Errorf("runspec permission %q, connectors %v, endpoint %q", rs.Permission, rs.Connectors, rs.MCPEndpoint)
	}
}

// hasPair reports whether args holds flag immediately followed by value.
func hasPair(args []string, flag, value string) bool {
	return slices.Contains(flagValues(args, flag), value)
}

func checkAgentArgv(t *testing.T, rs render.RunSpec) {
	t.Helper()
	a := rs.Agent.Args
	if len(a) == 0 || a[0] != "create" {
		t.Errorf("agent argv starts %q, want create", a)
	}
	netd := flagValues(rs.Netd.Args, "--name")
	if len(netd) != 1 {
		t.Fatalf("netd argv has names %q", netd)
	}
	// The live workspace is the first --mount (an isolated run replaces exactly it), and an
	// isolated run's is the run's clone, under the project's clones, writable.
	if m := flagValues(a, "--mount"); len(m) == 0 || !strings.HasSuffix(m[0], ",target=/workspace") || !strings.HasPrefix(m[0], "type=bind,source=/") {
		t.Errorf("the agent's first --mount is %q, not the workspace", m)
	}
	if want := "type=bind,source=/home/u/.local/state/abox/projects/" + rs.Hash + "/clones/" + render.RunToken + ",target=/workspace"; rs.Isolated != want {
		t.Errorf("isolated workspace mount %q, want %q", rs.Isolated, want)
	}
	for _, p := range [][2]string{
		{"--cap-drop", "ALL"},
		{"--security-opt", "no-new-privileges"},
		{"--user", "1000:1000"},
		{"--network", "container:" + netd[0]},
	} {
		if !hasPair(a, p[0], p[1]) {
			t.Errorf("agent argv lacks %s %s", p[0], p[1])
		}
	}
	if n := flagValues(a, "--network"); len(n) != 1 {
		t.Errorf("agent argv has networks %q, want exactly one", n)
	}
	if !slices.Contains(a, "--init") {
		t.Error("agent argv lacks --init")
	}
	if !slices.Contains(a, "--read-only") {
		t.Error("agent argv lacks --read-only")
	}
	for _, f := range []string{"--pids-limit", "--memory"} {
		if v := flagValues(a, f); len(v) != 1 || v[0] == "" || v[0] == "0" || v[0] == "-1" {
			t.Errorf("agent argv %s = %q, want one positive limit", f, v)
		}
	}
	if u := flagValues(a, "--user"); len(u) != 1 {
		t.Errorf("agent argv sets --user %d times, want once", len(u))
	}
	for _, bad := range []string{"--cap-add", "--privileged", "-p", "--publish", "--publish-all", "-P",
		"--device", "--pid", "--ipc", "--userns", "--uts", "--cgroupns", "--volumes-from", "-v", "--volume"} {
		for _, arg := range a {
			if arg == bad || strings.HasPrefix(arg, bad+"=") {
				t.Errorf("agent argv holds %s", arg)
			}
		}
	}
	for _, o := range flagValues(a, "--security-opt") {
		if strings.Contains(o, "unconfined") || strings.HasPrefix(o, "no-new-privileges=false") ||
			strings.HasPrefix(o, "no-new-privileges:false") {
			t.Errorf("agent argv --security-opt %s", o)
		}
	}
	if rt := flagValues(a, "--runtime"); len(rt) > 1 || (len(rt) == 1 && !slices.Contains(manifest.Runtimes, rt[0])) {
		t.Errorf("agent argv --runtime %q, want at most one of %q", rt, manifest.Runtimes)
	}
	if rt, ok := rs.Runtime(); !ok || !slices.Contains(manifest.Runtimes, rt) {
		t.Errorf("runspec agent runtime %q (ok %v), want one of %q", rt, ok, manifest.Runtimes)
	}
	checkMounts(t, "agent", a, true)
	if rs.Agent.Image == "" || strings.HasPrefix(rs.Agent.Image, "-") {
		t.Errorf("agent image %q", rs.Agent.Image)
	}
	if len(rs.Agent.Command) == 0 || rs.Agent.Command[0] != "claude" {
		t.Errorf("agent command %q, want claude …", rs.Agent.Command)
	}
}

// wantNetdCaps is what netd's supervisor needs, written out here rather than read from
// render.NetdCaps, so that a capability added there fails this test until it is added here too:
// NET_ADMIN loads the ruleset and adds set elements, SETUID and SETGID start the serving child
// as netd's uid, DAC_READ_SEARCH reads the profile's token, which only the host user may read.
var wantNetdCaps = []string{"DAC_READ_SEARCH", "NET_ADMIN", "SETGID", "SETUID"}

func checkNetdArgv(t *testing.T, rs render.RunSpec) {
	t.Helper()
	a := rs.Netd.Args
	if len(a) < 2 || a[0] != "run" || a[1] != "--detach" {
		t.Errorf("netd argv starts %q, want run --detach", a)
	}
	for _, bad := range []string{"--privileged", "-p", "--publish", "--publish-all", "-P", "--device", "-v", "--volume"} {
		if slices.Contains(a, bad) {
			t.Errorf("netd argv holds %s", bad)
		}
	}
	if !hasPair(a, "--cap-drop", "ALL") || !hasPair(a, "--security-opt", "no-new-privileges") {
		t.Error("netd argv does not drop all capabilities and new privileges first")
	}
	if got := slices.Sorted(slices.Values(flagValues(a, "--cap-add"))); !slices.Equal(got, wantNetdCaps) {
		t.Errorf("netd argv --cap-add %q, want exactly %q", got, wantNetdCaps)
	}
	if !slices.Contains(a, "--read-only") {
		t.Error("netd argv lacks --read-only")
	}
	if !hasPair(a, "--network", rs.Network) {
		t.Errorf("netd argv lacks --network %s", rs.Network)
	}
	// netd loads nftables into the namespace the agent joins: it runs under runc, the daemon's
	// default, and nothing else.
	for _, rt := range flagValues(a, "--runtime") {
		if rt != manifest.RuntimeRunc {
			t.Errorf("netd argv --runtime %s, want runc", rt)
		}
	}
	checkMounts(t, "netd", a, false)
}

// checkNetdLogsApart: netd's logs, the audit trail the agent must not truncate or forge (F8),
// are in netd's filesystem alone. Netd mounts a volume at policy.LogDir; the agent mounts
// nothing there, and no volume that netd mounts.
func checkNetdLogsApart(t *testing.T, rs render.RunSpec) {
	t.Helper()
	netdVolumes := map[string]bool{}
	logs := false
	for _, m := range flagValues(rs.Netd.Args, "--mount") {
		f, err := mountFields(m)
		if err != nil {
			continue // checkMounts reports it
		}
		if f["type"] == "volume" && f["source"] != "" {
			netdVolumes[f["source"]] = true
		}
		logs = logs || (f["type"] == "volume" && f["target"] == policy.LogDir)
	}
	if !logs {
		t.Errorf("netd argv mounts no volume at %s for its logs", policy.LogDir)
	}
	for _, m := range flagValues(rs.Agent.Args, "--mount") {
		f, err := mountFields(m)
		if err != nil {
			continue
		}
		if f["target"] == policy.LogDir || strings.HasPrefix(f["target"], policy.LogDir+"/") {
			t.Errorf("agent --mount %q: netd's log directory in the agent", m)
		}
		if f["type"] == "volume" && netdVolumes[f["source"]] {
			t.Errorf("agent --mount %q: a volume netd mounts too", m)
		}
	}
}

// checkMounts requires every --mount to parse, and every bind to be read-only except the agent's
// workspace.
func checkMounts(t *testing.T, who string, args []string, agent bool) {
	t.Helper()
	for _, m := range flagValues(args, "--mount") {
		f, err := mountFields(m)
		if err != nil {
			t.Error(err)
			continue
		}
		for k := range f {
			if !slices.Contains([]string{"type", "source", "target", "readonly"}, k) {
				t.Errorf("%s --mount %q: unexpected field %q", who, m, k)
			}
		}
		if f["type"] == "bind" && f["readonly"] == "" && !(agent && f["target"] == render.Workspace) {
			t.Errorf("%s --mount %q: a writable bind", who, m)
		}
		if !strings.HasPrefix(f["target"], "/") || (f["type"] == "bind" && !strings.HasPrefix(f["source"], "/")) {
			t.Errorf("%s --mount %q: source and target must be absolute", who, m)
		}
	}
}

func checkNoDockerSocket(t *testing.T, arts []render.Artifact) {
	t.Helper()
	for _, a := range arts {
		if strings.Contains(string(a.Data), "docker.sock") {
			t.Errorf("%s mentions docker.sock", goldenPath(a))
		}
	}
}

func checkMCPJSON(t *testing.T, arts []render.Artifact, m *manifest.Manifest) {
	t.Helper()
	data := artifactData(t, arts, render.AgentDir+"/mcp.json")
	lower := strings.ToLower(string(data))
	for _, bad := range []string{"authorization", "token", "bearer", "header"} {
		if strings.Contains(lower, bad) {
			t.Errorf("mcp.json mentions %q:\n%s", bad, data)
		}
	}
	var doc struct {
		MCPServers map[string]struct {
			Type string `json:"type"`
			URL  string `json:"url"`
		} `json:"mcpServers"`
	}
	if err := decodeJSONStrict(data, &doc); err != nil {
		t.Fatalf("mcp.json: %v", err)
	}
	want := 0
	if len(m.DeclaredServers()) > 0 {
		want = 1
	}
	if len(doc.MCPServers) != want {
		t.Errorf("mcp.json has %d servers, want %d", len(doc.MCPServers), want)
	}
	for name, s := range doc.MCPServers {
		if !strings.HasPrefix(s.URL, "http://127.0.0.1:") {
			t.Errorf("mcp.json server %s at %q, want netd on 127.0.0.1", name, s.URL)
		}
	}
}

// checkIndex requires artifacts.json to list every other authoritative artifact and every
// review artifact with the sha256 and mode of what was rendered.
func checkIndex(t *testing.T, arts []render.Artifact) {
	t.Helper()
	last := arts[len(arts)-1]
	if last.Name != render.IndexName || last.Review {
		t.Fatalf("last artifact is %s, want %s", last.Name, render.IndexName)
	}
	var idx render.Index
	if err := decodeJSONStrict(last.Data, &idx); err != nil {
		t.Fatalf("artifacts.json: %v", err)
	}
	rs := runSpecOf(t, arts)
	if idx.AgentImage != rs.Agent.Image || idx.NetdImage != rs.Netd.Image || idx.AgentImage == "" {
		t.Errorf("artifacts.json images %q, %q; runspec %q, %q", idx.AgentImage, idx.NetdImage, rs.Agent.Image, rs.Netd.Image)
	}
	if idx.ManifestDigest == "" || idx.Version != testVersion {
		t.Errorf("artifacts.json digest %q, version %q", idx.ManifestDigest, idx.Version)
	}
	nFiles, nReview := 0, 0
	for _, a := range arts[:len(arts)-1] {
		list := idx.Files
		if a.Review {
			list, nReview = idx.Review, nReview+1
		} else {
			nFiles++
		}
		f, ok := list[a.Name]
		if !ok {
			t.Errorf("artifacts.json does not list %s", goldenPath(a))
			continue
		}
		if f.SHA256 != render.SHA256(a.Data) {
			t.Errorf("artifacts.json sha256 of %s is %s, want %s", goldenPath(a), f.SHA256, render.SHA256(a.Data))
		}
		wantMode := "0444"
		if a.Review {
			wantMode = "0644"
		}
		if f.Mode != octal(a) || f.Mode != wantMode {
			t.Errorf("artifacts.json mode of %s is %s; artifact mode %s, want %s", goldenPath(a), f.Mode, octal(a), wantMode)
		}
	}
	if len(idx.Files) != nFiles || len(idx.Review) != nReview {
		t.Errorf("artifacts.json lists %d files and %d review files, want %d and %d", len(idx.Files), len(idx.Review), nFiles, nReview)
	}
	for _, want := range []string{render.RunSpecFile, render.AgentDockerfile, render.NetdDockerfile,
		render.NetdDir + "/" + policy.RulesFile, render.NetdDir + "/" + policy.File, render.ResolvConf,
		render.AgentDir + "/mcp.json", render.AgentDir + "/settings.json", render.CatalogFile} {
		if _, ok := idx.Files[want]; !ok {
			t.Errorf("artifacts.json lacks authoritative %s", want)
		}
	}
	for _, want := range []string{render.ReviewMarker, render.AgentDockerfile, render.NetdDockerfile,
		policy.RulesFile, render.ComposeFile} {
		if _, ok := idx.Review[want]; !ok {
			t.Errorf("artifacts.json lacks review %s", want)
		}
	}
}

func octal(a render.Artifact) string {
	const digits = "01234567"
	p := uint32(a.Mode.Perm())
	return string([]byte{'0', digits[p>>6&7], digits[p>>3&7], digits[p&7]})
}

// checkCompose requires the review compose file to describe the same pair as runspec.json.
func checkCompose(t *testing.T, arts []render.Artifact, rs render.RunSpec) {
	t.Helper()
	var doc struct {
		Services map[string]map[string]any `yaml:"services"`
	}
	if err := yaml.Unmarshal(artifactData(t, arts, render.ReviewDir+"/"+render.ComposeFile), &doc); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	agent, netd := doc.Services["agent"], doc.Services["netd"]
	if agent == nil || netd == nil || len(doc.Services) != 2 {
		t.Fatalf("compose.yaml services %v, want agent and netd", doc.Services)
	}
	if agent["network_mode"] != "service:netd" || agent["user"] != "1000:1000" {
		t.Errorf("compose agent network_mode %v, user %v", agent["network_mode"], agent["user"])
	}
	for _, svc := range []map[string]any{agent, netd} {
		for _, bad := range []string{"ports", "privileged", "devices", "pid", "ipc", "userns_mode"} {
			if _, ok := svc[bad]; ok {
				t.Errorf("compose service has %s", bad)
			}
		}
	}
	if _, ok := agent["cap_add"]; ok {
		t.Error("compose agent has cap_add")
	}
	if rt, _ := rs.Runtime(); (rt == manifest.RuntimeRunc && agent["runtime"] != nil) || (rt != manifest.RuntimeRunc && agent["runtime"] != rt) {
		t.Errorf("compose agent runtime %v, runspec %s", agent["runtime"], rt)
	}
	if netd["runtime"] != nil {
		t.Errorf("compose netd runtime %v, want the default, runc", netd["runtime"])
	}
	if agent["image"] != rs.Agent.Image || netd["image"] != rs.Netd.Image {
		t.Errorf("compose images %v, %v; runspec %s, %s", agent["image"], netd["image"], rs.Agent.Image, rs.Netd.Image)
	}
	// Every limit of the argv is in the compose service too.
	limits := []struct{ flag, key string }{
		{"--pids-limit", "pids_limit"}, {"--memory", "mem_limit"}, {"--memory-swap", "memswap_limit"}, {"--cpus", "cpus"},
	}
	for _, l := range limits {
		v := flagValues(rs.Agent.Args, l.flag)
		got, ok := agent[l.key]
		switch {
		case len(v) == 0 && ok:
			t.Errorf("compose agent %s = %v, argv has no %s", l.key, got, l.flag)
		case len(v) == 1 && (!ok || toString(got) != v[0]):
			t.Errorf("compose agent %s = %v, argv %s %s", l.key, got, l.flag, v[0])
		}
	}
	vols, _ := agent["volumes"].([]any)
	if n := len(flagValues(rs.Agent.Args, "--mount")); len(vols) != n {
		t.Errorf("compose agent has %d volumes, argv %d mounts", len(vols), n)
	}
}

func toString(v any) string {
	b, _ := json.Marshal(v)
	return strings.Trim(string(b), `"`)
}

// checkNetdPolicy requires netd.json to allow every manifest entry and the mandatory hosts.
func checkNetdPolicy(t *testing.T, arts []render.Artifact, m *manifest.Manifest) {
	t.Helper()
	p, err := policy.Parse(artifactData(t, arts, render.NetdDir+"/"+policy.File))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range m.Egress {
		found := false
		for _, e := range p.Egress {
			if strings.EqualFold(strings.TrimSuffix(strings.SplitN(h, ":", 2)[0], "."), strings.SplitN(e, ":", 2)[0]) {
				found = true
			}
		}
		if !found {
			t.Errorf("netd.json does not allow %q: %q", h, p.Egress)
		}
	}
	for _, h := range p.Mandatory {
		if !slices.Contains(p.Egress, h) {
			t.Errorf("mandatory %s is not in egress", h)
		}
	}
	if (p.MCP != nil) != (len(m.DeclaredServers()) > 0) {
		t.Errorf("netd.json mcp = %v with %d declared servers", p.MCP, len(m.DeclaredServers()))
	}
}

// TestRulesetCheck runs nft in check mode on the rendered ruleset, when nft is on PATH and the
// test runs as root (nft -c needs CAP_NET_ADMIN to validate against the kernel). Nothing is
// loaded: -c only parses and evaluates the transaction.
func TestRulesetCheck(t *testing.T) {
	nft, err := exec.LookPath("nft")
	if err != nil {
		t.Skip("nft is not on PATH")
	}
	if os.Geteuid() != 0 {
		t.Skip("nft -c needs root")
	}
	arts := mustRender(t, loadSpec(t, "minimal"))
	for _, name := range []string{render.NetdDir + "/" + policy.RulesFile, render.ReviewDir + "/" + policy.RulesFile} {
		path := filepath.Join(t.TempDir(), "netpolicy.nft")
		if err := os.WriteFile(path, artifactData(t, arts, name), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(nft, "-c", "-f", path).CombinedOutput()
		if err != nil {
			// Root without CAP_NET_ADMIN (a container) cannot ask the kernel at all. Any other
			// error is the ruleset's: "No such file" is also how nft names a set, chain or
			// expression the kernel lacks, so it fails rather than skips.
			if strings.Contains(string(out), "Operation not permitted") {
				t.Skipf("nft -c needs CAP_NET_ADMIN: %s", out)
			}
			t.Errorf("nft -c -f %s: %v\n%s", name, err, out)
		}
	}
}

// TestDockerfileInstructions pins the instruction sequence of each Dockerfile, so a template
// change that adds an instruction is deliberate.
func TestDockerfileInstructions(t *testing.T) {
	for _, name := range caseNames(t) {
		t.Run(name, func(t *testing.T) {
			arts := mustRender(t, loadSpec(t, name))
			for _, df := range []string{render.AgentDockerfile, render.NetdDockerfile} {
				ins, err := dockerfileInstructionList(artifactData(t, arts, df))
				if err != nil {
					t.Fatalf("%s: %v", df, err)
				}
				if ins[0] != "FROM" || slices.Index(ins[1:], "FROM") >= 0 {
					t.Errorf("%s: instructions %q, want a single FROM first", df, ins)
				}
				if df == render.AgentDockerfile && ins[len(ins)-2] != "USER" {
					t.Errorf("%s: instructions %q: USER must come right before the final WORKDIR", df, ins)
				}
			}
		})
	}
}

func TestDockerfileParser(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
		ok       bool
	}{
		{"plain", "FROM x\nRUN a \\\n b\nUSER 1\n", []string{"FROM", "RUN", "USER"}, true},
		{"comment in continuation", "FROM x\nRUN a \\\n# c\n b\n", []string{"FROM", "RUN"}, true},
		{"injected", "FROM x\nRUN a\nADD http://evil /x\n", nil, false},
		{"directive", "# escape=`\nFROM x\n", nil, false},
		{"dangling", "FROM x\nRUN a \\\n", nil, false},
		{"lower", "from x\n", nil, false},
	}
	for _, tc := range tests {
		got, err := dockerfileInstructionList([]byte(tc.in))
		if (err == nil) != tc.ok || !slices.Equal(got, tc.want) {
			t.Errorf("%s: dockerfileInstructionList = %q, %v; want %q, ok=%v", tc.name, got, err, tc.want, tc.ok)
		}
	}
}

// checkCredential: the secret store is mounted into no container but netd, and into netd only
// the one file of claude_code.credential, read-only, at policy.CredentialFile, in injected mode
// only; the agent then holds the forwarder's address and the placeholder, in its environment
// and in the managed settings, and netd's policy names the upstream.
func checkCredential(t *testing.T, rs render.RunSpec, arts []render.Artifact, s render.Spec) {
	t.Helper()
	store := s.Paths.SecretsStore()
	for _, c := range []struct {
		who  string
		args []string
	}{{"agent", rs.Agent.Args}, {"netd", rs.Netd.Args}} {
		for _, m := range flagValues(c.args, "--mount") {
			f, err := mountFields(m)
			if err != nil {
				continue // checkMounts reports it
			}
			inStore := f["source"] == store || strings.HasPrefix(f["source"], store+"/")
			want := c.who == "netd" && s.Config.ClaudeCode.Injected() && f["source"] == store+"/"+s.Config.ClaudeCode.Credential &&
				f["target"] == "/run/abox/model/credential" && f["readonly"] == "true"
			if (inStore || f["target"] == "/run/abox/model/credential") && !want {
				t.Errorf("%s mounts %q", c.who, m)
			}
		}
	}
	env := map[string]string{}
	for _, e := range flagValues(rs.Agent.Args, "--env") {
		k, v, _ := strings.Cut(e, "=")
		env[k] = v
	}
	p, err := policy.Parse(artifactData(t, arts, render.NetdDir+"/"+policy.File))
	if err != nil {
		t.Fatal(err)
	}
	var settings struct{ Env map[string]string }
	if err := json.Unmarshal(artifactData(t, arts, render.AgentDir+"/settings.json"), &settings); err != nil {
		t.Fatal(err)
	}
	if !s.Config.ClaudeCode.Injected() {
		if p.Model != nil || env["ANTHROPIC_BASE_URL"] != "" || settings.Env["ANTHROPIC_BASE_URL"] != "" {
			t.Errorf("login-volume mode renders the forwarder: policy %+v, env %q", p.Model, env["ANTHROPIC_BASE_URL"])
		}
		return
	}
	for name, got := range map[string]map[string]string{"env": env, "settings": settings.Env} {
		if got["ANTHROPIC_BASE_URL"] != "http://127.0.0.1:15480" || got["ANTHROPIC_API_KEY"] != policy.CredentialPlaceholder {
			t.Errorf("agent %s: ANTHROPIC_BASE_URL %q, ANTHROPIC_API_KEY %q; want netd's forwarder and the placeholder", name,
				got["ANTHROPIC_BASE_URL"], got["ANTHROPIC_API_KEY"])
		}
	}
	if p.Model == nil || p.Model.Upstream != s.Config.ClaudeCode.Upstream() {
		t.Errorf("netd policy model %+v, want upstream %s", p.Model, s.Config.ClaudeCode.Upstream())
	}
}

// TestClaudeVolumePerProject: the agent's ~/.claude volume is the project's own, named by its
// hash, so another project's agent never mounts what this one left there.
func TestClaudeVolumePerProject(t *testing.T) {
	volumes := map[string]string{}
	for _, ws := range []string{testWorkspace, testWorkspace + "-other"} {
		s := loadSpec(t, "minimal")
		s.Project = testPaths.Project(ws)
		rs := runSpecOf(t, mustRender(t, s))
		var got []string
		for _, m := range flagValues(rs.Agent.Args, "--mount") {
			f, err := mountFields(m)
			if err != nil {
				t.Fatal(err)
			}
			if f["type"] == "volume" && f["target"] == render.AgentClaudeDir {
				got = append(got, f["source"])
			}
		}
		if len(got) != 1 || !strings.Contains(got[0], s.Project.Hash) {
			t.Fatalf("project %s: ~/.claude volumes %q, want one named by its hash %s", ws, got, s.Project.Hash)
		}
		volumes[got[0]] = ws
	}
	if len(volumes) != 2 {
		t.Errorf("two projects share the ~/.claude volume: %v", volumes)
	}
}
