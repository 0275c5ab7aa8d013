package render

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"strings"

	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/policy"
)

// Artifact is one rendered file. Name is relative to the artifacts directory, or to the
// workspace's .devcontainer/ when Review is set.
type Artifact struct {
	Name   string
	Mode   fs.FileMode
	Data   []byte
	Review bool
}

// Authoritative counts the artifacts that define the sandbox: all but the review copies of
// .devcontainer/, which nothing reads back.
func Authoritative(arts []Artifact) int {
	n := 0
	for _, a := range arts {
		if !a.Review {
			n++
		}
	}
	return n
}

// File is an input file the caller staged into a build context, identified by its content hash.
type File struct {
	Name   string // base name inside the context directory
	SHA256 string
}

// Spec is everything rendering depends on. The caller fills it from disk; Render reads nothing.
type Spec struct {
	Version  string             // abox version
	Manifest *manifest.Manifest // validated, defaults applied
	Config   *config.Config     // validated
	Paths    paths.Paths
	Project  paths.Project
	Home     string // host home directory, for ~ in mounts.context
	// CACerts are the image.ca_certificates staged into each build context's ca/ directory.
	CACerts []File
	// NPMRegistry is the host's npm registry URL (npm config get registry), passed to the image
	// build for claude_code.source npm; empty uses npm's own default.
	NPMRegistry string
	// Resolvers are the host's upstream DNS servers ("a.b.c.d:53"), which netd asks for names
	// Docker's embedded resolver cannot answer.
	Resolvers []string
	// NetdBinary is the sha256 of the abox binary the netd image is built from; it is part of
	// the netd image's tag.
	NetdBinary string
	// Custom are the servers of custom-servers.yaml.
	Custom config.CustomServers
	// Catalog resolves declared servers for the gateway catalog and tool narrowing; nil when no
	// catalog is available (then only custom and remote servers are known).
	Catalog Catalog
	// Agent is who the agent runs as: the workspace owner's uid and gid, or config.yaml's
	// agent.uid/agent.gid ([Identity]). The zero value means uid and gid 1000.
	Agent Identity
}

// Identity is a uid and gid.
type Identity struct{ UID, GID int }

// agent returns the agent's identity, the zero value read as 1000:1000.
func (s Spec) agent() Identity {
	if s.Agent == (Identity{}) {
		return Identity{policy.AgentUID, policy.AgentUID}
	}
	return s.Agent
}

// Catalog is what rendering needs to know about MCP servers.
type Catalog interface {
	// Server returns the catalog entry of name, or ok=false.
	Server(name string) (CatalogServer, bool)
}

// CatalogServer is one catalog entry as rendering sees it.
type CatalogServer struct {
	Tools []string // tool names the entry documents; empty if unknown
	// Prefix is the entry's prefix: the gateway lists each of its tools as <prefix>__<tool>,
	// documented or not. Empty for none.
	Prefix string
	// Raw is the upstream entry, re-emitted verbatim (plus disableNetwork) when a project sets
	// server_network: none for it. Nil for servers abox cannot shadow.
	Raw map[string]any
}

// Names of the authoritative artifacts.
const (
	RunSpecFile     = "runspec.json"
	AgentDockerfile = "Dockerfile"
	NetdDockerfile  = "netd.Dockerfile"
	NetdDir         = "netd"  // mounted read-only at /etc/abox in netd
	AgentDir        = "agent" // mounted read-only at /opt/abox in the agent
	ResolvConf      = "resolv.conf"
	CatalogFile     = "catalog.yaml"
	IndexName       = "artifacts.json"
	ReviewDir       = ".devcontainer"
	ReviewMarker    = ".abox-generated"
	ComposeFile     = "compose.yaml"
)

// Render produces every artifact for s, in a fixed order, ending with artifacts.json.
func Render(s Spec) ([]Artifact, error) {
	if s.Manifest == nil || s.Config == nil {
		return nil, fmt.Errorf("render: manifest and config are required")
	}
	m := newModel(s)
	if err := m.check(); err != nil {
		return nil, err
	}
	var arts []Artifact
	add := func(name string, mode fs.FileMode, data []byte) {
		arts = append(arts, Artifact{Name: name, Mode: mode, Data: data})
	}
	agentDF, err := m.agentDockerfile()
	if err != nil {
		return nil, err
	}
	netdDF, err := m.netdDockerfile()
	if err != nil {
		return nil, err
	}
	m.agentImage = imageTag("abox-agent-"+s.Manifest.Project, agentDF, m.agentFiles())
	m.netdImage = netdTag(s.Version, netdDF, s.NetdBinary)
	add(AgentDockerfile, 0o444, agentDF)
	add(NetdDockerfile, 0o444, netdDF)
	add(NetdDir+"/"+policyNft, 0o444, m.ruleset())
	add(NetdDir+"/"+policy.QueueFile, 0o444, policy.QueueRules())
	add(NetdDir+"/"+policyJSON, 0o444, m.netdPolicy())
	add(ResolvConf, 0o444, []byte(resolvConf))
	add(AgentDir+"/mcp.json", 0o444, m.mcpJSON())
	add(AgentDir+"/settings.json", 0o444, m.settingsJSON())
	add(CatalogFile, 0o444, m.catalogYAML())
	runspec, err := m.runSpec()
	if err != nil {
		return nil, err
	}
	add(RunSpecFile, 0o444, runspec)
	arts = append(arts, m.review(agentDF, netdDF)...)
	arts = append(arts, Artifact{Name: IndexName, Mode: 0o444, Data: index(s, arts)})
	return arts, nil
}

// netdTag names the netd image abox-netd:<version>-<hash>: the version says which abox built it;
// the hash covers its Dockerfile (image.base) and the abox binary baked into it, so two abox
// builds on one daemon never share a tag.
func netdTag(version string, dockerfile []byte, binary string) string {
	var files []File
	if binary != "" {
		files = []File{{Name: "abox", SHA256: binary}}
	}
	tag := imageTag("abox-netd", dockerfile, files)
	v := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, version)
	if len(v) > 80 {
		v = v[:80]
	}
	_, hash, _ := strings.Cut(tag, ":")
	return "abox-netd:" + v + "-" + hash[:8]
}

// imageTag names an image after the hash of everything that goes into it.
func imageTag(repo string, dockerfile []byte, files []File) string {
	h := sha256.New()
	h.Write(dockerfile)
	for _, f := range files {
		fmt.Fprintf(h, "\x00%s\x00%s", f.Name, f.SHA256)
	}
	return repo + ":" + hex.EncodeToString(h.Sum(nil))[:12]
}
