package gateway

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/aboxhq/abox/internal/catalog"
	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/render"
)

// Plan is the desired state of one profile's gateway, computed without touching docker.
type Plan struct {
	Profile     string
	Dir         string // the profile's state directory
	Union       *Union
	Catalog     []byte          // the union catalog file's content
	Images      []catalog.Image // server images that must be present
	Findings    []catalog.Finding
	Unshadowed  []string // server_network: none servers abox cannot switch off
	Leaks       []Leak   // projects whose netd would pass other projects' tools: refused
	Container   Container
	Fingerprint Fingerprint
	// Secrets is the secrets file [Manager.Up] writes, and what it lacks.
	Secrets Secrets
}

// Secrets is the gateway's secrets file as internal/secrets renders it from the store: one
// "<catalog secret name>=<value>" line per secret the profile's servers and remote servers
// declare (on Docker Desktop the value is an se:// reference). It is mounted read-only at
// [SecretsPath]; without it every declared secret reaches its server as <UNKNOWN>.
type Secrets struct {
	Data SecretData
	// Digest is the salted digest of Data. The fingerprint holds it, so a changed value recreates
	// the gateway; a bare hash would let anyone who reads the fingerprint guess a weak value.
	Digest string
	// Missing names the declared secrets the store does not hold, each with who needs it.
	Missing []string
}

// SecretData is the content of a secrets file. It prints as [redacted] with every verb, so a
// plan that reaches a log or an error message never shows a value.
type SecretData []byte

// Format implements fmt.Formatter.
func (SecretData) Format(f fmt.State, _ rune) { fmt.Fprint(f, "[redacted]") }

// PlanInput is what a plan is computed from.
type PlanInput struct {
	Profile  string
	Dir      string // paths.Paths.Gateway(Profile)
	Config   *config.Config
	Registry *Registry
	Catalog  *catalog.Catalog
	Custom   config.CustomServers
	Token    string
	Secrets  Secrets // empty when no server of the profile declares a secret
}

// ErrNoProfile is returned for a profile config.yaml does not define.
var ErrNoProfile = errors.New("no such profile")

// NewPlan computes the gateway the profile's bound projects need.
func NewPlan(in PlanInput) (*Plan, error) {
	prof, ok := in.Config.Profiles[in.Profile]
	if !ok {
		return nil, fmt.Errorf("profile %q: %w", in.Profile, ErrNoProfile)
	}
	u := in.Registry.Union()
	p := &Plan{Profile: in.Profile, Dir: in.Dir, Union: u}
	p.Findings = in.Catalog.Check(u.All(), u.RemoteNames())
	p.Images = in.Catalog.Images(u.Servers)
	p.Catalog = RenderCatalog(u, in.Catalog, in.Custom)
	p.Leaks = in.Registry.Leaks(in.Custom, in.Catalog)
	for _, s := range u.NetworkNone {
		_, custom := in.Custom[s]
		if e, ok := in.Catalog.Lookup(s); !custom && ok && (e.Raw == nil || e.Type == "remote") {
			p.Unshadowed = append(p.Unshadowed, s)
		}
	}
	p.Secrets = in.Secrets
	secrets := ""
	if len(in.Secrets.Data) > 0 {
		secrets = filepath.Join(in.Dir, SecretsFile)
	}
	p.Fingerprint = Fingerprint{
		Image:       in.Config.Gateway.Image,
		Servers:     u.All(),
		Tools:       u.Tools,
		CatalogSHA:  render.SHA256(p.Catalog),
		Network:     in.Config.Network,
		NetworkNone: u.NetworkNone,
		Port:        prof.Port,
		TokenSHA:    TokenSHA256(in.Token),
		Secrets:     in.Secrets.Digest,
		ServerLife:  ServerLife,
	}
	p.Container = Container{
		Profile:     in.Profile,
		Image:       in.Config.Gateway.Image,
		Network:     in.Config.Network,
		Port:        prof.Port,
		Servers:     u.All(),
		Tools:       u.Tools,
		CatalogFile: filepath.Join(in.Dir, CatalogFile),
		SecretsFile: secrets,
		Fingerprint: p.Fingerprint.Sum(),
	}
	return p, nil
}

// Errors returns the findings that stop abox before it starts the gateway, and the union's
// conflicts.
func (p *Plan) Errors() []string {
	out := append([]string{}, p.Union.Conflicts...)
	for _, s := range p.Unshadowed {
		out = append(out, fmt.Sprintf("server_network: none cannot be applied to %q: it is a remote entry of its catalog", s))
	}
	for _, f := range p.Findings {
		if f.Error {
			out = append(out, f.Message)
		}
	}
	return out
}

// URL is the gateway's MCP endpoint on the abox network.
func (p *Plan) URL() string { return URL(p.Profile, p.Container.Port) }
