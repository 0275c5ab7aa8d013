package deps

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"
)

// module is abox's module path; the tables below name packages relative to it.
const module = "github.com/aboxhq/abox"

// allowed lists, for every package of the module, the abox packages it may import and why.
// An edge missing here fails TestLayers: adding one is a decision, so write its reason. An
// edge listed here need not exist. "*" allows every abox package.
//
// The rules come from DESIGN §9 and STYLE §3.1: render and egress do no I/O and render never
// reaches docker; only docker runs docker; netd, which runs inside every sandbox next to the
// agent, imports only egress and policy; only cli sees everything, and nothing imports cli
// but main.
var allowed = map[string]map[string]string{
	"cmd/abox": {
		"internal/cli": "main builds the App and runs the root command (DESIGN §9)",
	},
	"internal/cli": {
		"*": "only cli sees everything (STYLE §3.1): flags, one call into a domain package, output",
	},
	"internal/approval": {
		"internal/manifest": "the approved manifest is parsed, compared and diffed as a manifest",
		"internal/paths":    "approved.yaml lives in the project's state directory",
		"internal/statefs":  "it is recorded atomically and privately, and an edit writes agentbox.yaml atomically",
		"internal/wsfile":   "it is read as a regular file only, never through a symlink",
	},
	"internal/artifact": {
		"internal/paths":   "artifacts live in the project's state directory",
		"internal/policy":  "the rendered netd policy is read back as the policy netd parses",
		"internal/render":  "it writes render's artifacts and checks them against artifacts.json",
		"internal/statefs": "writes are atomic and private",
	},
	"internal/catalog": {
		"internal/config":   "custom-servers.yaml entries join the catalog",
		"internal/manifest": "host servers are judged by the manifest's name rules and declarations, and imported as Doc edits",
		"internal/render":   "the catalog implements render.Catalog, the interface render defines for lookups",
	},
	"internal/claudecode": {},
	"internal/config": {
		"internal/egress":   "config.yaml carries egress entries, validated by the one definition",
		"internal/manifest": "custom servers are checked with the manifest's charset rules and located errors",
		"internal/policy":   "log limits are bounded by policy's MinLogLimit and MaxLogLimit; the model upstream by ModelUpstream",
		"internal/statefs":  "edits of config.yaml are written atomically and private (EditFile)",
		"internal/termtext": "decoder messages quote user text, made safe to print",
	},
	"internal/detect": {
		"internal/egress": "suggested egress entries are built and validated as egress.Entry",
		"internal/wsfile": "marker files are read from the workspace, which the agent writes",
	},
	"internal/docker": {},
	"internal/docker/dockertest": {
		"internal/docker": "the fake implements docker.Runner",
	},
	"internal/doctor": {
		// DESIGN §8: doctor audits the live machine against every artifact, so it reads the
		// state of every domain package. It still may not import cli or netd.
		"internal/approval":   "manifest.approved and the watch list read the approved manifest by its one rule",
		"internal/artifact":   "artifacts are checked against artifacts.json",
		"internal/catalog":    "tools and servers are looked up to audit MCP scope",
		"internal/claudecode": "the agent's Claude Code version is compared with the verified release",
		"internal/config":     "config.yaml says what to expect of the machine",
		"internal/docker":     "evidence comes from docker inspect (STYLE §3.5)",
		"internal/egress":     "allowlist entries are matched the same way netd matches them",
		"internal/gateway":    "gateway containers and registries are audited",
		"internal/isolate":    "pending isolated runs and leftover clones are listed with the code that makes them",
		"internal/manifest":   "the approved manifest is compared with the workspace's (STYLE §3.1)",
		"internal/owner":      "the agent's uid is checked against the workspace owner",
		"internal/paths":      "state and config locations",
		"internal/policy":     "the loaded ruleset and counters of a running sandbox are read back",
		"internal/project":    "Load reads config.yaml as every command does (project.LoadConfig) and re-renders the project it loaded",
		"internal/render":     "rendered artifacts are re-rendered and compared (STYLE §3.1)",
		"internal/sandbox":    "masks and live-sandbox state are checked with the code that makes them",
		"internal/secrets":    "the secrets store's claim is stated on every run (DESIGN §5)",
		"internal/telemetry":  "runs.jsonl and the review queue",
		"internal/termtext":   "machine text is made safe to print",
		"internal/watch":      "workspace and git fingerprints are diffed (DESIGN §8)",
		"internal/wsfile":     "workspace files are read without letting the agent steer the reader",
	},
	"internal/edit": {
		// The user's edits of agentbox.yaml from the host, by one rule (its doc): lock, approve,
		// validate, write, render, reload running sandboxes.
		"internal/approval": "an edit is refused on an unapproved manifest and applied to the approved copy alike (approval.Edit)",
		"internal/artifact": "which hosts are mandatory is read from the rendered netd policy, what netd enforces",
		"internal/catalog":  "a server is declared only if a catalog or custom-servers.yaml knows it; imports are classified there",
		"internal/docker":   "running sandboxes are listed and signalled through the docker client (sandbox.Reload)",
		"internal/manifest": "every edit is a manifest.Doc edit, re-validated as a manifest",
		"internal/project":  "an edit works on a loaded project and holds its lock",
		"internal/sandbox":  "running sandboxes get the new policy by sandbox.Reload",
		"internal/termtext": "docker's errors in a stale removal's message are made safe to print",
	},
	"internal/egress": {}, // DESIGN §3: the one definition, shared by render, netd and doctor
	"internal/gateway": {
		"internal/artifact": "the health probe runs in a bound project's netd image, which its runspec.json names",
		"internal/catalog":  "the gateway's catalog is rendered from catalog entries",
		"internal/config":   "profiles, the gateway image and custom servers",
		"internal/docker":   "the gateway's lifecycle runs through the docker client",
		"internal/manifest": "bound projects declare servers, tools and remote servers",
		"internal/paths":    "Reconcile finds the profile's state, config.yaml and bound projects' state in the paths it is given",
		"internal/policy":   "the MCP port and addresses netd forwards to; a project's netd policy is what its scope is decided from",
		"internal/render":   "container names, mounts and catalog entries are rendered as for the agent",
		"internal/statefs":  "registry, token and catalog are written atomically",
		"internal/termtext": "container output is made safe to print",
	},
	"internal/hostprobe": {}, // the host's npm, go and resolv.conf, asked how they are configured (issue 19 item 4)
	"internal/images": {
		// What goes into the agent image is checked here before anything is built; the host's
		// tools are asked through an injected Probe, never run from this package.
		"internal/claudecode": "the native Claude Code build is downloaded and verified against its release's manifest",
		"internal/config":     "config.yaml names the base, the CA certificates and the Claude Code and rtk sources",
		"internal/docker":     "images are built through the docker client (DESIGN §9: only docker runs docker)",
		"internal/paths":      "the project's artifacts and build directories and the release cache; ~ in config paths",
		"internal/render":     "the rendered Dockerfiles are the build's recipe; CA certificates are named as render names them",
		"internal/statefs":    "the build directories and the release checksum are written privately",
	},
	"internal/isolate": {
		"internal/linkwalk": "where a committed symlink leads is walked as the kernel walks it, not joined as text",
		"internal/paths":    "clones and their records live in the project's state directory",
		"internal/statefs":  "run records are written atomically and privately, under the project's lock",
		"internal/termtext": "the agent's file names in abox's end-of-run commit message are made safe to print",
		"internal/watch":    "Diff flags the execution-adjacent paths watch knows, first",
	},
	"internal/launch": {
		// One run of the sandbox from an approved project, in the order of its checks (its doc):
		// it asks the packages that know each step, and runs no program itself.
		"internal/docker":   "the sandbox it builds runs netd and the agent through the caller's docker client",
		"internal/isolate":  "an isolated run's clone is made before the run and collected after it",
		"internal/manifest": "run.workspace: isolated makes every run of the project isolated",
		"internal/project":  "a run is of a loaded project: its manifest, config.yaml and state, and the workspace owner the agent runs as",
		"internal/render":   "the verified runspec names the agent's identity, the masks and the allowed domains",
		"internal/sandbox":  "the preflight, the login check, the run, its record and the spare netd are sandbox's",
		"internal/secrets":  "the secrets attached to the agent are read from the store, and their exposure stated",
	},
	"internal/linkwalk": {},
	"internal/manifest": {
		"internal/egress":   "egress entries are validated by the one definition",
		"internal/termtext": "located errors quote user text, made safe to print",
		"internal/wsfile":   "agentbox.yaml is in the workspace, which the agent writes",
	},
	"internal/netd": {
		// netd runs inside every sandbox, next to the agent: it shares the allowlist and the
		// policy with the host and nothing else, so no host-side parsing is reachable there.
		"internal/egress":   "DNS, SNI and HTTP decisions use the one definition of an entry",
		"internal/policy":   "the ruleset, ports, sets and log records netd loads and writes",
		"internal/netd/nfq": "the supervisor holds the first packets of the agent's TLS flows in a netfilter queue",
	},
	"internal/netd/nfq": {}, // netd's NFQUEUE client: raw netlink and packet parsing, no abox package
	"internal/owner": {
		"internal/config": "config.yaml may override the agent's uid and gid",
		"internal/render": "the result is render.Identity, which the artifacts use",
	},
	"internal/paths": {},
	"internal/policy": {
		"internal/egress": "the ruleset's sets hold the ports of egress entries",
	},
	"internal/project": {
		// Loading a project and building its render spec, by one rule for every command,
		// doctor's re-render and the preflight's currency check (see its doc).
		"internal/approval": "the secrets a project requires include what its approved manifest needs, read by the approval's one rule",
		"internal/catalog":  "the spec holds the catalog the servers are looked up in",
		"internal/config":   "config.yaml and custom-servers.yaml are half of a project",
		"internal/images":   "the CA certificates and the npm registry the spec names are read as the image build reads them",
		"internal/isolate":  "a project's isolated runs are reviewed with its watched patterns (Isolated)",
		"internal/manifest": "agentbox.yaml is the other half",
		"internal/owner":    "the agent runs as the workspace's owner, or config.yaml's agent.uid and agent.gid",
		"internal/paths":    "the project's state layout",
		"internal/render":   "the result is a render.Spec; isolated runs flag the patterns runspec.json watches (render.Watched)",
		"internal/secrets":  "the secrets a project requires are secrets.Required of its manifests",
		"internal/statefs":  "the project's lock",
	},
	"internal/remedy": {
		// The exit status and the hint of every error a command can end with, out of cli (its
		// doc): it knows the errors of the packages below, imports none of their callers, and
		// only cli imports it.
		"internal/approval":   "an unapproved or corrupt approval is a boundary refusal (exit 3)",
		"internal/catalog":    "a catalog finding and a bad or unknown server name name their fix",
		"internal/docker":     "a daemon that does not answer, or an image that is not there",
		"internal/doctor":     "a workspace the agent cannot write gets doctor's own hint (CanWriteHint)",
		"internal/edit":       "a refused manifest edit names the command that lifts the refusal",
		"internal/gateway":    "a gateway that is open, unhealthy or lacks secrets names the command that fixes it",
		"internal/images":     "a refused build input is a boundary refusal; a failed build names the fix",
		"internal/isolate":    "an isolated run's review commands and its finish name the run's id",
		"internal/launch":     "a run's refusals and its verdict get their exit status (3, 4, the agent's)",
		"internal/manifest":   "a missing agentbox.yaml names abox init",
		"internal/owner":      "a root-owned workspace names chown or agent.uid",
		"internal/project":    "an unreadable config.yaml, manifest or profile names the file to fix",
		"internal/provision":  "the step of abox up that failed names its own fix",
		"internal/sandbox":    "the preflight's refusal sentinels, each with its status and hint",
		"internal/secrets":    "a secret that is missing, loose or unmapped names the secrets command that fixes it",
		"internal/setup/pick": "init's picker cancelled or out of input",
		"internal/termtext":   "a workspace path quoted in a hint is escaped",
	},
	"internal/provision": {
		// The sequences of `abox up`, `abox render` and `abox nuke`: their order and what they
		// create and remove, out of cli (its doc). It may not import cli; only cli imports it.
		"internal/approval": "up approves first and records the approval last; render binds the approved manifest, by the approval's one rule",
		"internal/artifact": "render writes the artifacts; up reads the runspec.json it wrote and probes the gateway from its netd image",
		"internal/docker":   "the network, the ~/.claude volume and nuke's removals run through the docker client (DESIGN §9: only docker runs docker)",
		"internal/gateway":  "render and up bind the project to its profile's gateway and up reconciles it; nuke unbinds it",
		"internal/images":   "up builds the agent and netd images with the images builder",
		"internal/isolate":  "nuke removes the clones of isolated runs with the code that makes them",
		"internal/project":  "every sequence works on a loaded project, under its lock",
		"internal/render":   "render renders the project's spec; the runspec names the images, volume and network",
		"internal/sandbox":  "the ~/.claude volume, the baseline and nuke's containers, caches and state are sandbox's",
	},
	"internal/render": {
		// DESIGN §9: pure, manifest+config → artifacts; never docker (STYLE §3.1).
		"internal/config":   "config.yaml is half of render's input",
		"internal/egress":   "the allowlist is rendered for netd",
		"internal/manifest": "agentbox.yaml is the other half",
		"internal/paths":    "state locations as values, for mounts; paths does no I/O",
		"internal/policy":   "netpolicy.nft and netd's policy come from policy",
	},
	"internal/sandbox": {
		"internal/approval":  "the preflight refuses a manifest changed since `abox up` approved it, by the approval's one rule",
		"internal/artifact":  "the preflight verifies the artifacts against artifacts.json and reads runspec.json",
		"internal/docker":    "netd and the agent run through the docker client (DESIGN §9: only docker runs docker)",
		"internal/gateway":   "the preflight finds the gateway netd forwards to, and its address on the sandbox's network",
		"internal/manifest":  "the preflight compares the workspace manifest with the approved one and reads its context mounts",
		"internal/owner":     "the preflight refuses an agent that could not write the workspace",
		"internal/paths":     "the project's runs and masks directories",
		"internal/policy":    "the ruleset read back and netd's events",
		"internal/render":    "the run follows runspec.json, the audited argv",
		"internal/statefs":   "run records are written atomically",
		"internal/secrets":   "in injected mode the preflight checks that the store holds the Claude credential privately",
		"internal/telemetry": "the agent's stream is printed and the run recorded",
		"internal/termtext":  "the agent's output is made safe to print",
		"internal/watch":     "execution-adjacent files are fingerprinted before and after a run",
	},
	"internal/sandbox/sandboxtest": {
		"internal/docker":  "the test warden drives its run's containers through the docker client it is given",
		"internal/sandbox": "it runs sandbox.Ward, the warden itself, in the test's process",
	},
	"internal/secrets": {
		"internal/approval": "the reverse index counts what the approved manifest, which runs, requires",
		"internal/catalog":  "which servers need which secrets",
		"internal/config":   "secrets.yaml names the sources",
		"internal/docker":   "Docker Desktop's secrets engine is driven through the docker client",
		"internal/gateway":  "values are delivered to gateway profiles; the reverse index reads their registries",
		"internal/manifest": "which secrets a project's manifest needs",
		"internal/paths":    "the store, salt and state locations",
		"internal/policy":   "the Claude credential is checked by the rule netd reads it with (CheckCredential)",
		"internal/statefs":  "the store and digests are written atomically and privately",
		"internal/termtext": "names from files are made safe to print",
	},
	"internal/securitymd": {
		"internal/testjson": "the tests SECURITY.md cites are checked in go test -json records",
	},
	"internal/securitymd/testgate": {
		"internal/securitymd": "the CI gate runs the SECURITY.md checks",
		"internal/testjson":   "it reads go test -json records",
	},
	"internal/setup": {
		// What `abox init` proposes and writes: the join of config, manifest and detection.
		"internal/catalog":  "proposed servers are checked against the catalog and custom-servers.yaml",
		"internal/config":   "config.yaml gives the default profile and credential, and gets init's new profile and credential mode",
		"internal/detect":   "toolchains, git remotes and registry hosts are what init proposes",
		"internal/manifest": "the answers are proposed and merged into agentbox.yaml as manifest.Doc edits",
		"internal/paths":    "context directories may start with ~; the written project's state layout",
		"internal/project":  "the written project is rendered as a project, by the spec every command builds",
		"internal/render":   "the answers are rendered in memory before anything is written",
		"internal/secrets":  "the report says whether the store holds the injected credential yet",
		"internal/statefs":  "agentbox.yaml and the workspace are written atomically, under the project's lock",
	},
	"internal/setup/pick": {
		// init's interactive picker (its doc): the questions and their validation, nothing written.
		"internal/config":   "a new profile's name is checked as config.yaml checks it",
		"internal/egress":   "typed hosts are checked by the one definition of an entry",
		"internal/manifest": "toolchains and permission modes offered are the manifest's; chosen hosts are merged as it merges them",
		"internal/secrets":  "the injected credential's name is checked as a secret name",
		"internal/setup":    "the questions start from setup's state and answers, and fill them in",
	},
	"internal/statefs": {},
	"internal/telemetry": {
		"internal/egress":   "ignored hosts are matched against the review queue as netd matches entries",
		"internal/isolate":  "a run's row in `abox logs` shows the state of its isolated branch now, from its record",
		"internal/paths":    "`abox logs` reads the project's runs index and its isolated runs where the state layout puts them",
		"internal/policy":   "netd's log records and counters are policy types",
		"internal/statefs":  "runs.jsonl and the review queue are written atomically",
		"internal/termtext": "agent-written text is made safe to print",
		"internal/watch":    "a run's record holds its execution-adjacent changes",
	},
	"internal/termtext": {},
	"internal/testjson": {},
	"internal/watch": {
		"internal/linkwalk": "where a watched symlink leads is walked as the kernel walks it, link by link",
		"internal/statefs":  "baselines are written atomically",
		"internal/wsfile":   "watched files are in the workspace, which the agent writes",
	},
	"internal/toolcost": {
		"internal/claudecode": "whether the configured Claude Code defers tool definitions decides what a turn costs",
		"internal/policy":     "tools are kept and attributed exactly as netd decides (policy.MCP.Allows)",
		"internal/render":     "a deferred tool's name is priced as the agent's mcp.json names the server",
		"internal/termtext":   "tool names come from the servers: the report's text is made safe to print",
	},
	"internal/wsfile": {},
	"internal/deps":   {}, // these tests
}

// exception is an edge the code has today that the rules do not allow. Each is listed so that
// TestLayers fails on any new one, and each must still exist, so that the list only shrinks.
type exception struct{ from, to, why string }

var exceptions = []exception{}

// execAllowed are the packages that may import os/exec and why. DESIGN §9: only docker runs
// docker; the others run one named program each.
var execAllowed = map[string]string{
	"internal/docker":    "it drives the docker CLI, so every argv abox runs shows in --verbose",
	"internal/hostprobe": "it asks the host's npm and go for their registry settings (read-only), behind the Probe callers inject, and finds programs on PATH for doctor",
	"internal/isolate":   "it runs git to clone, collect, fetch, diff and merge isolated runs, never trusting the clone's config (its doc)",
	"internal/netd":      "inside the sandbox: nft loads and lists the policy, iptables-nft-restore the queue rule; netd re-executes itself to drop privileges",
	"internal/sandbox":   "it re-executes abox itself, detached, to remove a run's netd and start the project's spare after a run (SpawnAfterRun)",
	"internal/secrets":   "1Password's op reads a secret, whose value comes back on a pipe",
}

// pure are the packages that do no I/O, and the source of that rule. They may not import
// the standard packages in ioPackages.
var pure = map[string]string{
	"internal/toolcost": "its doc: the tools come from the caller's probe; it only prices them",
	"internal/render":   "DESIGN §9: render is pure; Write in artifact does the I/O",
	"internal/egress":   "DESIGN §9: egress does no I/O",
	"internal/policy":   "its doc: pure, so the CLI, netd and doctor agree on the ruleset byte for byte",
	"internal/paths":    "its doc: computed from an environment passed in as a value",
}

var ioPackages = []string{"os", "os/exec", "os/signal", "os/user", "io/ioutil", "net", "net/http", "syscall", "golang.org/x/sys/unix"}

// neverDeps are abox packages a package must not reach even through others (go list -deps).
var neverDeps = map[string]map[string]string{
	"internal/render": {"internal/docker": "STYLE §3.1: render never imports docker; running the artifact is docker's job"},
}

// onlyDeps are packages whose whole dependency graph may hold no abox package but these.
var onlyDeps = map[string]map[string]string{
	// netd runs inside every sandbox next to the agent: whatever allowed says of egress and
	// policy later, no host-side code (manifest parsing, config, docker) may become reachable.
	"internal/netd": {
		"internal/egress":   "the one definition of an allowlist entry",
		"internal/policy":   "the ruleset, ports, sets and log records",
		"internal/netd/nfq": "the TLS queue's netlink, which imports no abox package itself",
	},
}

type goPackage struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// listPackages runs `go list` over the module and returns its packages by path relative to
// the module. It is run, not parsed from source, so build constraints count as the build sees
// them (the e2e files, behind their tag, are left out).
func listPackages(t *testing.T) map[string]goPackage {
	t.Helper()
	out := goCmd(t, nil, "list", "-json=ImportPath,Imports,Deps", module+"/...")
	pkgs := map[string]goPackage{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p goPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding go list: %v", err)
		}
		pkgs[rel(p.ImportPath)] = p
	}
	if len(pkgs) == 0 {
		t.Fatal("go list found no packages")
	}
	return pkgs
}

// rel strips the module path from an abox package path; other paths are returned as they are.
func rel(path string) string {
	if r, ok := strings.CutPrefix(path, module+"/"); ok {
		return r
	}
	return path
}

func ours(path string) bool { return strings.HasPrefix(path, module+"/") }

// TestLayers checks every package's direct imports against allowed, execAllowed and pure,
// and its dependencies against neverDeps and onlyDeps.
func TestLayers(t *testing.T) {
	pkgs := listPackages(t)
	seen := map[exception]bool{}
	excepted := func(from, to string) bool {
		for _, e := range exceptions {
			if e.from == from && e.to == to {
				seen[e] = true
				return true
			}
		}
		return false
	}
	for _, name := range slices.Sorted(maps.Keys(pkgs)) {
		p := pkgs[name]
		edges, known := allowed[name]
		if !known {
			t.Errorf("%s is a new package: add its row to allowed, with a reason for each import", name)
			continue
		}
		for _, imp := range p.Imports {
			to := rel(imp)
			switch {
			case ours(imp) && edges["*"] == "" && edges[to] == "" && !excepted(name, to):
				t.Errorf("%s imports %s, which the layering does not allow (DESIGN §9): "+
					"remove the import, or add the edge to allowed with its reason", name, to)
			case imp == "os/exec" && execAllowed[name] == "" && !excepted(name, to):
				t.Errorf("%s imports os/exec: only docker runs docker (DESIGN §9); put the call behind "+
					"the docker client or an injected function", name)
			case pure[name] != "" && slices.Contains(ioPackages, imp) && !excepted(name, to):
				t.Errorf("%s imports %s, but it does no I/O (%s)", name, imp, pure[name])
			}
		}
		for _, dep := range p.Deps {
			if why := neverDeps[name][rel(dep)]; why != "" {
				t.Errorf("%s depends on %s through its imports: %s", name, rel(dep), why)
			}
			if only, ok := onlyDeps[name]; ok && ours(dep) && only[rel(dep)] == "" {
				t.Errorf("%s depends on %s through its imports; it may reach only %s", name, rel(dep),
					strings.Join(slices.Sorted(maps.Keys(only)), " and "))
			}
		}
	}
	for name := range allowed {
		if _, ok := pkgs[name]; !ok {
			t.Errorf("allowed has a row for %s, which is no longer a package: remove it", name)
		}
	}
	for _, e := range exceptions {
		if !seen[e] {
			t.Errorf("the exception %s → %s (%s) no longer occurs: remove it from exceptions", e.from, e.to, e.why)
		}
	}
}
