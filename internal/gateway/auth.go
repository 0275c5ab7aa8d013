package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/statefs"
)

// The gateway's token is the one control between anything on the abox network and every MCP
// server of the profile, with their secrets and the Docker socket behind them. Its presence in
// the container's arguments proves nothing: docker/mcp-gateway before v0.43.1 switched the check
// off whenever DOCKER_MCP_IN_CONTAINER=1, which its own image sets, whatever the token
// (docker/mcp-gateway#243). So abox asks the gateway itself: every probe, after an initialize
// with the token succeeded, sends one without an Authorization header and one with a wrong
// bearer token, and both must be refused with 401 or 403.

// AuthCheck is how a gateway answered the two initialize requests it must refuse. Each field is
// the HTTP status, 0 when the request got no response.
type AuthCheck struct {
	NoToken    int    `json:"no_token"`
	WrongToken int    `json:"wrong_token"`
	Error      string `json:"error,omitempty"` // why a request got no response
}

// Enforced reports whether both requests were refused.
func (a *AuthCheck) Enforced() bool {
	return a != nil && refusal(a.NoToken) && refusal(a.WrongToken)
}

func refusal(status int) bool {
	return status == http.StatusUnauthorized || status == http.StatusForbidden
}

func (a *AuthCheck) String() string {
	if a == nil {
		return "the probe did not get as far as requests without the token"
	}
	got := func(status int) string {
		if status == 0 {
			return "no answer"
		}
		return fmt.Sprintf("HTTP %d", status)
	}
	s := fmt.Sprintf("an initialize without a token got %s, one with a wrong token %s", got(a.NoToken), got(a.WrongToken))
	if a.Error != "" {
		s += " (" + a.Error + ")"
	}
	return s
}

// AuthProbeAgent is the User-Agent of the requests without the token, so that a gateway's log
// tells them from a client's.
const AuthProbeAgent = "abox-auth-probe/1"

// initializeBody is an MCP initialize request, as a client would send it.
const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",` +
	`"capabilities":{},"clientInfo":{"name":"abox-auth-probe","version":"1"}}}`

// checkAuth sends url an initialize without a token and one with a wrong token (never token
// itself). An MCP session an open gateway grants is closed again at once.
func checkAuth(ctx context.Context, url, token string) *AuthCheck {
	client := &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 15 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	a := &AuthCheck{}
	var errs []string
	var err error
	if a.NoToken, err = initializeAs(ctx, client, url, ""); err != nil {
		errs = append(errs, "without a token: "+err.Error())
	}
	if a.WrongToken, err = initializeAs(ctx, client, url, "Bearer "+wrongToken(token)); err != nil {
		errs = append(errs, "with a wrong token: "+err.Error())
	}
	a.Error = strings.Join(errs, "; ")
	return a
}

// initializeAs POSTs an initialize with the given Authorization header ("" for none) and
// returns the response's status.
func initializeAs(ctx context.Context, client *http.Client, url, authorization string) (int, error) {
	resp, err := client.Do(mcpRequest(ctx, http.MethodPost, url, authorization, initializeBody))
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" && resp.StatusCode < 300 {
		req := mcpRequest(ctx, http.MethodDelete, url, authorization, "")
		req.Header.Set("Mcp-Session-Id", sid)
		if r, err := client.Do(req); err == nil {
			r.Body.Close()
		}
	}
	return resp.StatusCode, nil
}

func mcpRequest(ctx context.Context, method, url, authorization, body string) *http.Request {
	req, _ := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("User-Agent", AuthProbeAgent)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	return req
}

// wrongToken is a random token of the real one's shape, never equal to it.
func wrongToken(token string) string {
	for {
		b := make([]byte, 24)
		_, _ = rand.Read(b)
		if w := "abox-wrong-" + hex.EncodeToString(b); w != token {
			return w
		}
	}
}

// OpenError is a gateway that answered MCP with the token but did not refuse requests without
// it: abox does not use it.
type OpenError struct {
	Profile string
	Auth    *AuthCheck
}

func (e *OpenError) Error() string {
	return fmt.Sprintf("the %s gateway does not enforce its token: %s", e.Profile, e.Auth)
}

// CheckAuth probes the profile's gateway once (see [Manager.Probe]) and returns the result when
// it answered with the token and refused without it; an [*OpenError] when it answered but did
// not refuse; an [*UnhealthyError] when it did not answer with the token.
func (m *Manager) CheckAuth(ctx context.Context, profile, network, image string, port int, token string) (*ProbeResult, error) {
	res, err := m.Probe(ctx, profile, network, image, port, token)
	switch {
	case err != nil:
		return nil, err
	case res.OK && res.AuthEnforced():
		return res, nil
	case res.OK:
		return res, &OpenError{Profile: profile, Auth: res.Auth}
	}
	return res, &UnhealthyError{Profile: profile, Reason: res.Error, Unauthorized: res.Unauthorized()}
}

// AuthProofFile records, in the profile's state directory, the gateway container abox last saw
// refuse requests without its token. A container's image, arguments and environment are fixed
// at creation, so the proof holds for its ID and image; `abox run` probes again only for a
// container it has no proof for.
const AuthProofFile = "auth.json"

// AuthProof is the content of [AuthProofFile].
type AuthProof struct {
	Container string    `json:"container"`
	Image     string    `json:"image"`
	Auth      AuthCheck `json:"auth"`
	Checked   time.Time `json:"checked"`
}

// SaveAuthProof records that container ct refused as auth shows.
func SaveAuthProof(dir string, ct *docker.Container, auth *AuthCheck, now time.Time) error {
	if ct == nil || !auth.Enforced() {
		return errors.New("no proof to record")
	}
	data, _ := json.MarshalIndent(AuthProof{Container: ct.ID, Image: ct.Image, Auth: *auth, Checked: now.UTC()}, "", "  ")
	return statefs.WriteFile(filepath.Join(dir, AuthProofFile), append(data, '\n'), statefs.PrivateMode)
}

// AuthProven reports whether the profile's state directory holds a proof for ct.
func AuthProven(dir string, ct *docker.Container) bool {
	data, err := os.ReadFile(filepath.Join(dir, AuthProofFile))
	if err != nil {
		return false
	}
	var p AuthProof
	return json.Unmarshal(data, &p) == nil && ct != nil && ct.ID != "" && p.Container == ct.ID && p.Image == ct.Image && p.Auth.Enforced()
}

// TokenError says the profile's token cannot be read, so its gateway's auth cannot be checked.
type TokenError struct {
	Profile string
	Err     error
}

func (e *TokenError) Error() string {
	return fmt.Sprintf("the %s gateway's token cannot be read: %v", e.Profile, e.Err)
}
func (e *TokenError) Unwrap() error { return e.Err }

// AuthError is an error of [Manager.CheckAuth] within [Manager.ProveAuth]: the gateway was not
// seen to refuse requests without its token. It unwraps to that error and prints as it does.
type AuthError struct {
	Profile string
	Err     error
}

func (e *AuthError) Error() string { return e.Err.Error() }
func (e *AuthError) Unwrap() error { return e.Err }

// ProveAuth makes sure the profile's gateway container gw has been seen to refuse requests
// without its token, the profile's state directory being dir. The proof `gateway up` records
// for the container it started stands for that container; any other is probed now
// ([Manager.CheckAuth], from image on network) and the proof recorded. It returns a
// [*TokenError] when the token cannot be read and an [*AuthError] when the check fails.
func (m *Manager) ProveAuth(ctx context.Context, dir, profile, network, image string, port int, gw *docker.Container) error {
	if AuthProven(dir, gw) {
		return nil
	}
	token, err := ReadToken(dir)
	if err != nil {
		return &TokenError{Profile: profile, Err: err}
	}
	res, err := m.CheckAuth(ctx, profile, network, image, port, token)
	if err != nil {
		return &AuthError{Profile: profile, Err: err}
	}
	return SaveAuthProof(dir, gw, res.Auth, m.now())
}
