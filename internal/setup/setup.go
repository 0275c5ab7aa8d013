package setup

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aboxhq/abox/internal/catalog"
	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/detect"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/statefs"
)

// Errors init stops on; each wraps the error that says what is wrong.
var (
	// ErrExisting: the workspace's agentbox.yaml is invalid, and init would overwrite it.
	ErrExisting = errors.New("existing agentbox.yaml is invalid")
	// ErrAnswers: the answers make an invalid manifest.
	ErrAnswers = errors.New("init's answers make an invalid manifest")
)

// kindError is err, also matching kind with errors.Is; its text is err's.
type kindError struct{ kind, err error }

func (e *kindError) Error() string   { return e.err.Error() }
func (e *kindError) Unwrap() []error { return []error{e.kind, e.err} }

// UnknownServersError names the servers neither the catalog nor custom-servers.yaml knows.
type UnknownServersError struct{ Names []string }

func (e *UnknownServersError) Error() string {
	q := make([]string, len(e.Names))
	for i, n := range e.Names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return "unknown MCP server " + strings.Join(q, ", ")
}

// Env is what Load reads besides the workspace.
type Env struct {
	Config     *config.Config
	Custom     config.CustomServers
	ConfigFile string // config.yaml's path; it may not exist yet
	MCPHome    string // the Docker MCP Toolkit's catalogs
	Probe      detect.RegistryProbe
}

// State is what init starts from: configuration, any existing manifest, and detection.
type State struct {
	Workspace    string
	Config       *config.Config
	ConfigExists bool
	Custom       config.CustomServers
	Catalog      *catalog.Catalog
	Doc          *manifest.Doc      // nil for a new manifest
	Existing     *manifest.Manifest // nil for a new manifest
	Toolchains   []string           // detected, installable
	LeftOut      []string           // detected but not installable ([manifest.Uninstallable])
	Suggested    map[string][]string
	Remotes      []string
}

// Load reads the state init starts from for the workspace dir.
func Load(ctx context.Context, env Env, dir string) (*State, error) {
	ws, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	st := &State{Workspace: ws, Config: env.Config, Custom: env.Custom}
	_, statErr := os.Stat(env.ConfigFile)
	st.ConfigExists = statErr == nil
	if st.Catalog, err = catalog.Load(env.MCPHome, env.Custom); err != nil {
		return nil, err
	}
	if err := st.readExisting(); err != nil {
		return nil, err
	}
	// detection recognises a .NET project, but proposing dotnet would only make the render
	// refuse the manifest init just wrote.
	st.Toolchains = slices.DeleteFunc(detect.Toolchains(ws), func(t string) bool {
		_, ok := manifest.Uninstallable[t]
		if ok {
			st.LeftOut = append(st.LeftOut, t)
		}
		return ok
	})
	st.Remotes = detect.GitRemotes(ws)
	st.Suggested = SuggestEgress(ctx, env.Probe, manifest.Toolchains)
	return st, nil
}

// SuggestEgress returns the suggested hosts of each toolchain, from the host's own registry
// configuration ([detect.HostRegistries]).
func SuggestEgress(ctx context.Context, p detect.RegistryProbe, toolchains []string) map[string][]string {
	return detect.SuggestEgress(toolchains, detect.HostRegistries(ctx, p))
}

// readExisting loads the manifest already in the workspace, if any. An invalid one stops init:
// it would otherwise be overwritten.
func (st *State) readExisting() error {
	data, err := manifest.ReadFile(filepath.Join(st.Workspace, manifest.FileName))
	if errors.Is(err, manifest.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if st.Doc, err = manifest.ParseDoc(data, manifest.FileName); err != nil {
		return &kindError{ErrExisting, err}
	}
	if st.Existing, err = st.Doc.Manifest(manifest.FileName); err != nil {
		return &kindError{ErrExisting, err}
	}
	return nil
}

// CheckServers refuses names neither the catalog nor custom-servers.yaml knows
// ([UnknownServersError]).
func (st *State) CheckServers(servers []string) error {
	if unknown := st.Catalog.Unknown(servers); len(unknown) > 0 {
		return &UnknownServersError{Names: unknown}
	}
	return nil
}

// Answers are the values init writes, from flags, the existing manifest, detection and, on a
// terminal, the picker.
type Answers struct {
	Project, Profile, PermissionMode string
	Servers, Toolchains, Egress      []string
	Masks, Context                   []string
	Tools                            map[string][]string
	// Credential is the secret netd injects as the Claude credential (config.yaml's
	// claude_code.credential), or "" for the login volume.
	Credential string
}

// Defaults computes the answers without asking: existing values first, flags and detection added
// ([manifest.Propose]). Given hosts are written as the allowlist reads them.
func (st *State) Defaults(o manifest.InitArgs) Answers {
	hosts := make([]string, len(o.Egress))
	for i, h := range o.Egress {
		hosts[i] = manifest.Canon(h)
	}
	m := manifest.Propose(st.Existing, manifest.Proposal{
		Given: manifest.Manifest{Project: o.Project, Profile: o.Profile, Run: manifest.Run{PermissionMode: o.PermissionMode},
			Servers: o.Servers, Toolchains: o.Toolchains, Egress: hosts, Mounts: manifest.Mounts{Mask: o.Masks}},
		Project: manifest.ProjectNameFor(st.Workspace), Profile: st.Config.DefaultProfile(),
		Toolchains: st.Toolchains, Suggested: st.Suggested, Remotes: st.Remotes,
	})
	return Answers{
		Project: m.Project, Profile: m.Profile, PermissionMode: m.Run.PermissionMode,
		Servers: m.Servers, Toolchains: m.Toolchains, Egress: m.Egress,
		Masks: m.Mounts.Mask, Context: m.Mounts.Context,
		Credential: cmp.Or(o.Credential, st.Config.ClaudeCode.Credential),
	}
}

// EgressCandidates are the hosts the picker offers: the answers', then each chosen toolchain's
// suggestions and the git remotes'.
func (st *State) EgressCandidates(ans Answers) []string {
	out := slices.Clone(ans.Egress)
	for _, t := range ans.Toolchains {
		out = manifest.Union(out, st.Suggested[t])
	}
	return manifest.Union(out, st.Remotes)
}

// Narrow limits server to the chosen tools of all it has; none, or every one, means no
// narrowing.
func (a *Answers) Narrow(server string, chosen []string, all int) {
	if len(chosen) == 0 || len(chosen) >= all {
		return
	}
	if a.Tools == nil {
		a.Tools = map[string][]string{}
	}
	a.Tools[server] = chosen
}

// Summary is the one-line summary of the answers the picker asks to confirm.
func (a Answers) Summary() string {
	cred := "login volume"
	if a.Credential != "" {
		cred = "injected from secret " + a.Credential
	}
	return fmt.Sprintf("project %s · profile %s · servers %s · toolchains %s · egress %s · mode %s · credential %s",
		a.Project, a.Profile, listOrNone(a.Servers), listOrNone(a.Toolchains), listOrNone(a.Egress), a.PermissionMode, cred)
}

func listOrNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ", ")
}

// CheckContextDirs checks the context directories typed, space-separated: each absolute or
// starting with ~/, and a directory (home expands ~).
func CheckContextDirs(s, home string) error {
	for _, d := range strings.Fields(s) {
		if !strings.HasPrefix(d, "/") && !strings.HasPrefix(d, "~") {
			return fmt.Errorf("%s: write an absolute path or one starting with ~/", d)
		}
		if fi, err := os.Stat(paths.ExpandHome(d, home)); err != nil || !fi.IsDir() {
			return fmt.Errorf("%s is not a directory", d)
		}
	}
	return nil
}

// Plan is what init writes: agentbox.yaml's document and the manifest it reads as, and the
// configuration init renders with.
type Plan struct {
	Doc        *manifest.Doc
	Manifest   *manifest.Manifest
	NewProfile string // the profile init made up, or ""
	// CredentialChanged: the credential mode differs from config.yaml's.
	CredentialChanged bool
	st                *State
}

// Plan applies the answers to the state's configuration and document. Nothing is written.
func (st *State) Plan(ans Answers) (*Plan, error) {
	pl := &Plan{st: st}
	if _, ok := st.Config.Profiles[ans.Profile]; !ok {
		st.Config.Profiles[ans.Profile] = config.Profile{Port: st.Config.NextFreePort()}
		pl.NewProfile = ans.Profile
	}
	pl.CredentialChanged = st.setCredential(ans.Credential)
	doc, err := st.mergeDoc(ans)
	if err != nil {
		return nil, err
	}
	pl.Doc = doc
	if pl.Manifest, err = doc.Manifest(manifest.FileName); err != nil {
		return nil, &kindError{ErrAnswers, err}
	}
	return pl, nil
}

// setCredential puts the chosen credential mode into the configuration init renders with and
// reports whether it differs from config.yaml's: going back to the login volume drops
// api_upstream and server_tools too, which are used only with an injected credential.
func (st *State) setCredential(name string) bool {
	cc := &st.Config.ClaudeCode
	if cc.Credential == name {
		return false
	}
	cc.Credential = name
	if name == "" {
		cc.APIUpstream, cc.ServerTools = "", ""
	}
	return true
}

// mergeDoc applies the answers to the existing document, keeping every other field and comment,
// or builds a new one.
func (st *State) mergeDoc(ans Answers) (*manifest.Doc, error) {
	m := &manifest.Manifest{
		Version: manifest.Version, Project: ans.Project, Profile: ans.Profile,
		Servers: ans.Servers, Tools: ans.Tools, Toolchains: ans.Toolchains, Egress: ans.Egress,
		Mounts: manifest.Mounts{Mask: ans.Masks, Context: ans.Context},
		Run:    manifest.Run{PermissionMode: ans.PermissionMode},
	}
	if st.Doc == nil {
		return manifest.NewDoc(m)
	}
	if err := st.Doc.Merge(m); err != nil {
		return nil, err
	}
	return st.Doc, nil
}

// Write creates the workspace, writes config.yaml when there is none (so users have a file to
// edit) or the plan adds a profile or changes the credential mode, keeping the rest of the file
// as the user wrote it, then, holding the project's lock, agentbox.yaml.
func (pl *Plan) Write(configFile string, lock func() (func(), error)) error {
	if err := statefs.MkdirAll(pl.st.Workspace); err != nil {
		return err
	}
	if !pl.st.ConfigExists || pl.NewProfile != "" || pl.CredentialChanged {
		if err := pl.writeConfig(configFile); err != nil {
			return err
		}
	}
	unlock, err := lock()
	if err != nil {
		return err
	}
	defer unlock()
	return statefs.WriteFile(pl.ManifestPath(), pl.Doc.Bytes(), 0o644)
}

func (pl *Plan) writeConfig(path string) error {
	cfg := pl.st.Config
	_, err := config.EditFile(path, cfg, func(d *config.Doc) error {
		if pl.CredentialChanged {
			if name := cfg.ClaudeCode.Credential; name != "" {
				if err := d.SetCredential(name); err != nil {
					return err
				}
			} else {
				d.ClearCredential()
			}
		}
		if pl.NewProfile == "" {
			return nil
		}
		return d.SetProfile(pl.NewProfile, cfg.Profiles[pl.NewProfile])
	})
	return err
}

// ManifestPath is agentbox.yaml's path in the workspace.
func (pl *Plan) ManifestPath() string { return filepath.Join(pl.st.Workspace, manifest.FileName) }
