package policy

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// ModelPort is netd's model-API forwarder: in injected-credential mode the agent's
// ANTHROPIC_BASE_URL points here, and netd adds the real credential on the way out.
const ModelPort = 15480

// CredentialFile is where netd's root process reads the Claude credential in injected mode: a
// bind of the host's 0600 secret file, which only netd's container mounts.
const CredentialFile = "/run/abox/model/credential"

// ModelCADir holds, in injected mode, the image.ca_certificates of config.yaml bound into netd's
// container: the model forwarder trusts them beside the system's roots (a corporate gateway's CA,
// or a test's).
const ModelCADir = "/run/abox/model/ca"

// CredentialPlaceholder is the credential the agent holds in injected mode. It is shaped like an
// API key so that Claude Code sends it without a login, and it is worth nothing: netd replaces
// whatever credential a request carries, and no upstream accepts this one.
const CredentialPlaceholder = "sk-ant-api03-abox-placeholder-netd-adds-the-real-credential-0000"

// DefaultModelUpstream is the Messages API netd forwards to unless claude_code.api_upstream
// names a corporate gateway.
const DefaultModelUpstream = "https://api.anthropic.com"

// Credential kinds: an Anthropic API key goes in x-api-key; the long-lived OAuth token
// `claude setup-token` prints goes in Authorization as a bearer token, with the OAuth beta.
const (
	CredentialAPIKey = "api-key"
	CredentialOAuth  = "oauth-token"
)

// OAuthBeta is the anthropic-beta value the Messages API wants with an OAuth bearer token.
const OAuthBeta = "oauth-2025-04-20"

// oauthPrefix starts every token `claude setup-token` prints.
const oauthPrefix = "sk-ant-oat"

// CredentialKind tells the two kinds of credential apart by the OAuth token's prefix; anything
// else is sent as an API key (a corporate gateway's keys have no fixed shape).
func CredentialKind(v string) string {
	if strings.HasPrefix(v, oauthPrefix) {
		return CredentialOAuth
	}
	return CredentialAPIKey
}

// MaxCredentialLen bounds the credential netd reads (netd's bound on its secret files).
const MaxCredentialLen = 4096

// CheckCredential reports whether v, the credential file's content with surrounding white space
// trimmed, is what netd accepts: one line of printable ASCII without spaces, at most
// [MaxCredentialLen] bytes. netd refuses to start with anything else.
func CheckCredential(v string) error {
	if v == "" || len(v) > MaxCredentialLen || strings.IndexFunc(v, func(r rune) bool { return r <= ' ' || r > '~' }) >= 0 {
		return fmt.Errorf("the credential is not one line of printable ASCII without spaces (at most %d bytes), as an API key or a setup-token is", MaxCredentialLen)
	}
	return nil
}

// ModelAPI is the model-API forwarder's part of the policy: where netd sends the agent's model
// requests. It holds no secret; the credential comes from [CredentialFile].
type ModelAPI struct {
	// Upstream is an https URL, optionally with a path prefix for a gateway that serves the
	// API under one (https://llm.example.com/anthropic). Only netd connects to its host.
	Upstream string `json:"upstream"`
	// ServerTools lets requests through that ask the API's servers to run tools of their own
	// (web search, web fetch, code execution, MCP servers): those reach hosts past the
	// allowlist on the agent's behalf. false (claude_code.server_tools unset or "refuse"): netd
	// refuses them.
	ServerTools bool `json:"server_tools,omitempty"`
}

// ModelUpstream parses and checks an upstream URL: https, a host, no user info, query or
// fragment, a clean path. It returns the URL with its port made explicit.
func ModelUpstream(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.Hostname() == "" || u.User != nil || u.RawQuery != "" ||
		u.Fragment != "" || u.Opaque != "" || u.RawPath != "" {
		return nil, fmt.Errorf("model API upstream %q is not an https URL without user, query or fragment", raw)
	}
	if strings.Contains(u.Path, "/../") || strings.HasSuffix(u.Path, "/..") || strings.Contains(u.Path, "//") {
		return nil, fmt.Errorf("model API upstream %q has an unclean path", raw)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	if u.Port() == "" {
		u.Host += ":443"
	}
	if p, err := strconv.Atoi(u.Port()); err != nil || p < 1 || p > 65535 {
		return nil, fmt.Errorf("model API upstream %q has an invalid port", raw)
	}
	return u, nil
}
