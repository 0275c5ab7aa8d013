package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/statefs"
)

// Files in a profile's state directory (paths.Paths.Gateway).
const (
	RegistryFile    = "registry.json"
	FingerprintFile = "fingerprint.json"
	CatalogFile     = "catalog.yaml"
	// SecretsFile is the gateway's secrets file (`<catalog secret name>=<value>` lines), written
	// by [Manager.Up] from [Plan.Secrets]. It is mounted, read-only, only when some server of
	// the profile declares a secret.
	SecretsFile = "secrets.env"
	lockFile    = "lock"
)

// Registry is gateways/<profile>/registry.json: the projects bound to a profile and what each
// declares. It is written by commands the user runs on the host (init, render, up, mcp …) and
// read by `gateway up`, which never reads a workspace manifest itself.
type Registry struct {
	Profile  string             `json:"profile"`
	Projects map[string]Binding `json:"projects"` // by project hash
}

// Binding is what one project asks of its profile's gateway.
type Binding struct {
	Workspace     string              `json:"workspace"`
	Project       string              `json:"project"`
	Servers       []string            `json:"servers"`                  // catalog and custom servers
	Tools         map[string][]string `json:"tools,omitempty"`          // the manifest's narrowing
	RemoteServers map[string]Remote   `json:"remote_servers,omitempty"` // by name
	CustomServers []string            `json:"custom_servers,omitempty"` // the subset of Servers from custom-servers.yaml
	ServerNetwork map[string]string   `json:"server_network,omitempty"` // server → shared | none
}

// Remote is a remote server as bound: the manifest's definition, with its transport defaulted.
// Header values hold only ${VAR} references to secrets, never a value.
//
// It mirrors [manifest.RemoteServer] on purpose, not by accident: its JSON tags are
// registry.json's format, while the manifest type has none because its Go JSON form is hashed
// into render.ManifestDigest, which tagging it would change for every manifest with a remote
// server. The fields must stay the same, in the same order (TestRemoteMirrorsManifest), and
// [bindRemote] and [Remote.declaration] copy every one (TestRemoteRoundTrip), so that no field
// is dropped on the way to the gateway's catalog.
type Remote struct {
	URL         string            `json:"url"`
	Transport   string            `json:"transport"`
	Headers     map[string]string `json:"headers,omitempty"`
	Secrets     []Secret          `json:"secrets,omitempty"`
	Description string            `json:"description,omitempty"`
}

// Secret maps a stored secret to the environment variable a remote server's headers read: a
// [manifest.SecretEnv] in registry.json's JSON form.
type Secret struct {
	Name string `json:"name"`
	Env  string `json:"env"`
}

// bindRemote is the binding's copy of the manifest's remote server r, its transport defaulted.
func bindRemote(r manifest.RemoteServer) Remote {
	if r.Transport == "" {
		r.Transport = manifest.DefaultTransport
	}
	rb := Remote{URL: r.URL, Transport: r.Transport, Headers: r.Headers, Description: r.Description}
	for _, s := range r.Secrets {
		rb.Secrets = append(rb.Secrets, Secret(s))
	}
	return rb
}

// declaration is r as a manifest declares it, for rendering the catalog.
func (r Remote) declaration() manifest.RemoteServer {
	mr := manifest.RemoteServer{URL: r.URL, Transport: r.Transport, Headers: r.Headers, Description: r.Description}
	for _, s := range r.Secrets {
		mr.Secrets = append(mr.Secrets, manifest.SecretEnv(s))
	}
	return mr
}

// NewBinding describes what the manifest m of the workspace ws asks of its gateway.
func NewBinding(ws string, m *manifest.Manifest, custom config.CustomServers) Binding {
	b := Binding{Workspace: ws, Project: m.Project, Servers: slices.Clone(m.Servers)}
	if b.Servers == nil {
		b.Servers = []string{}
	}
	if len(m.Tools) > 0 {
		b.Tools = map[string][]string{}
		for k, v := range m.Tools {
			b.Tools[k] = slices.Clone(v)
		}
	}
	for name, r := range m.RemoteServers {
		if b.RemoteServers == nil {
			b.RemoteServers = map[string]Remote{}
		}
		b.RemoteServers[name] = bindRemote(r)
	}
	for _, s := range m.Servers {
		if _, ok := custom[s]; ok {
			b.CustomServers = append(b.CustomServers, s)
		}
	}
	for k, v := range m.ServerNetwork {
		if b.ServerNetwork == nil {
			b.ServerNetwork = map[string]string{}
		}
		b.ServerNetwork[k] = v
	}
	return b
}

// Declares reports whether the binding asks for any server.
func (b Binding) Declares() bool { return len(b.Servers)+len(b.RemoteServers) > 0 }

// LoadRegistry reads the registry of the profile whose state directory is dir. A missing file
// is an empty registry.
func LoadRegistry(dir, profile string) (*Registry, error) {
	r := &Registry{Profile: profile, Projects: map[string]Binding{}}
	data, err := os.ReadFile(filepath.Join(dir, RegistryFile))
	if errors.Is(err, fs.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the %s gateway registry: %w", profile, err)
	}
	if err := json.Unmarshal(data, r); err != nil {
		return nil, fmt.Errorf("reading the %s gateway registry %s: %w", profile, filepath.Join(dir, RegistryFile), err)
	}
	if r.Projects == nil {
		r.Projects = map[string]Binding{}
	}
	r.Profile = profile
	return r, nil
}

// Save writes the registry atomically, 0600, with sorted keys.
func (r *Registry) Save(dir string) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("encoding the %s gateway registry: %w", r.Profile, err)
	}
	return statefs.WriteFile(filepath.Join(dir, RegistryFile), buf.Bytes(), statefs.PrivateMode)
}

// Hashes returns the bound projects' hashes, sorted.
func (r *Registry) Hashes() []string { return slices.Sorted(maps.Keys(r.Projects)) }

// LockProfile takes the profile's lock, which serialises registry edits and gateway
// reconciliation across projects.
func LockProfile(dir string) (unlock func(), err error) {
	return statefs.Lock(filepath.Join(dir, lockFile))
}

// Bind records b as the binding of the project hash on profile, and removes the project from
// every other profile's registry (a project is on one profile at a time). gatewaysDir is
// paths.Paths.GatewaysDir. It returns the profiles the project left.
func Bind(gatewaysDir, profile, hash string, b Binding) (left []string, err error) {
	if err := editRegistry(gatewaysDir, profile, func(r *Registry) bool {
		if old, ok := r.Projects[hash]; ok && equalJSON(old, b) {
			return false
		}
		r.Projects[hash] = b
		return true
	}); err != nil {
		return nil, err
	}
	others, err := Profiles(gatewaysDir)
	if err != nil {
		return nil, err
	}
	for _, p := range others {
		if p == profile {
			continue
		}
		removed, err := unbindOne(gatewaysDir, p, hash)
		if err != nil {
			return left, err
		}
		if removed {
			left = append(left, p)
		}
	}
	return left, nil
}

// Unbind removes the project hash from every profile's registry and returns the profiles it
// was bound to.
func Unbind(gatewaysDir, hash string) ([]string, error) {
	profiles, err := Profiles(gatewaysDir)
	if err != nil {
		return nil, err
	}
	var from []string
	for _, p := range profiles {
		removed, err := unbindOne(gatewaysDir, p, hash)
		if err != nil {
			return from, err
		}
		if removed {
			from = append(from, p)
		}
	}
	return from, nil
}

func unbindOne(gatewaysDir, profile, hash string) (removed bool, err error) {
	err = editRegistry(gatewaysDir, profile, func(r *Registry) bool {
		_, removed = r.Projects[hash]
		delete(r.Projects, hash)
		return removed
	})
	return removed, err
}

// editRegistry edits a profile's registry under its lock, saving it when edit reports a change.
func editRegistry(gatewaysDir, profile string, edit func(*Registry) bool) error {
	dir := filepath.Join(gatewaysDir, profile)
	unlock, err := LockProfile(dir)
	if err != nil {
		return err
	}
	defer unlock()
	r, err := LoadRegistry(dir, profile)
	if err != nil {
		return err
	}
	if !edit(r) {
		return nil
	}
	return r.Save(dir)
}

// Profiles lists the profiles that have a state directory, sorted.
func Profiles(gatewaysDir string) ([]string, error) {
	entries, err := os.ReadDir(gatewaysDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing gateway state: %w", err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && manifest.IsProjectName(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}
