package secrets

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"golang.org/x/term"

	"github.com/aboxhq/abox/internal/catalog"
	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/termtext"
)

// Host is what the secrets commands need of the machine: its docker client, abox's layout, the
// environment and home that sources read, and the no-echo prompt when there is a terminal.
type Host struct {
	Docker  *docker.Client
	Paths   paths.Paths
	MCPHome string                      // the catalog's home, for which servers need what
	Env     func(string) (string, bool) // the host environment
	Home    string                      // for ~ in file paths
	// Prompt reads a value typed without echo ([TerminalPrompt]); nil without a terminal.
	Prompt func(label string) ([]byte, error)
	Now    func() time.Time
	// Warn prints a warning with an optional hint; nil drops warnings.
	Warn func(hint, format string, args ...any)
}

// Sources reads values from the host: its environment, its home for ~, op on PATH and the
// prompt.
func (h *Host) Sources(allowLoose bool) *Sources {
	return &Sources{Env: h.Env, Home: h.Home, Prompt: h.Prompt, AllowLoosePerms: allowLoose}
}

// DetectError is [Detect] failing: the daemon does not answer, or the docker CLI does not
// work. Its message is the underlying error's.
type DetectError struct{ Err error }

func (e *DetectError) Error() string { return e.Err.Error() }
func (e *DetectError) Unwrap() error { return e.Err }

// Store picks the store this host has ([Detect]); a failure is a [*DetectError].
func (h *Host) Store(ctx context.Context) (Choice, error) {
	c, err := Detect(ctx, h.Docker, h.Paths.SecretsStore())
	if err != nil {
		return c, &DetectError{Err: err}
	}
	return c, nil
}

// Open prepares a [Manager] on the host's store ([OpenLocked]). When lock is set it holds the
// secrets lock until the returned func is called, which is never nil.
func (h *Host) Open(ctx context.Context, lock, allowLoose bool) (*Manager, Choice, func(), error) {
	noop := func() {}
	choice, err := h.Store(ctx)
	if err != nil {
		return nil, choice, noop, err
	}
	m, unlock, err := OpenLocked(h.Paths, choice.Store, h.Sources(allowLoose), h.Now, lock)
	if err != nil {
		return nil, choice, noop, err
	}
	return m, choice, unlock, nil
}

// ConfigError is a configuration file (secrets.yaml, custom-servers.yaml) that does not load.
// Its message is the underlying error's.
type ConfigError struct {
	File string
	Err  error
}

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// Config reads secrets.yaml; a missing file maps nothing.
func (h *Host) Config() (*config.Secrets, error) {
	s, err := config.LoadSecrets(h.Paths.SecretsFile())
	if err != nil {
		return nil, &ConfigError{File: h.Paths.SecretsFile(), Err: err}
	}
	return s, nil
}

// Index builds the reverse index over every registered project ([BuildIndex]).
func (h *Host) Index() (*Index, error) {
	custom, err := config.LoadCustomServers(h.Paths.CustomServersFile())
	if err != nil {
		return nil, &ConfigError{File: h.Paths.CustomServersFile(), Err: err}
	}
	cat, err := catalog.Load(h.MCPHome, custom)
	if err != nil {
		return nil, err
	}
	return BuildIndex(h.Paths, cat)
}

// Served reports whether any registered project hands one of names to a server or a remote
// server, so that a new value needs the gateway recreated. An index that cannot be built
// says no.
func (h *Host) Served(names ...string) bool {
	x, err := h.Index()
	return err == nil && x.ServedAny(names...)
}

// StoredNames lists the host's store ([StoredNames]), or nil when it cannot be asked (no
// daemon).
func (h *Host) StoredNames(ctx context.Context) []string {
	names, _ := StoredNames(ctx, h.Docker, h.Paths.SecretsStore())
	return names
}

// GatewaySecrets renders the secrets file of the gateway serving u ([ForGateway]) from the
// host's store.
func (h *Host) GatewaySecrets(ctx context.Context, u *gateway.Union, cat *catalog.Catalog) (gateway.Secrets, error) {
	open := func(ctx context.Context) (Store, error) {
		choice, err := h.Store(ctx)
		return choice.Store, err
	}
	return ForGateway(ctx, open, h.Paths.SecretsSalt(), u, cat)
}

// AttachedError is an attached secret the store does not hold, so the agent cannot start with
// it.
type AttachedError struct{ Missing *MissingError }

func (e *AttachedError) Error() string { return "attached secrets are " + e.Missing.Error() }
func (e *AttachedError) Unwrap() error { return e.Missing }

// AgentEnv reads the secrets attached to the agent from the host's store, as the env file
// the sandbox pipes to `docker create` ([EnvFile]). nil when none is attached; a secret the
// store lacks is an [*AttachedError].
func (h *Host) AgentEnv(ctx context.Context, attached map[string]string) ([]byte, error) {
	if len(attached) == 0 {
		return nil, nil
	}
	choice, err := h.Store(ctx)
	if err != nil {
		return nil, err
	}
	data, err := EnvFile(ctx, choice.Store, attached)
	var me *MissingError
	if errors.As(err, &me) {
		return nil, &AttachedError{Missing: me}
	}
	return data, err
}

func (h *Host) warn(hint, format string, args ...any) {
	if h.Warn != nil {
		h.Warn(hint, format, args...)
	}
}

// NameError is a name the store cannot hold.
type NameError struct{ Name string }

func (e *NameError) Error() string {
	return fmt.Sprintf("%q is not a valid secret name", termtext.Line(e.Name))
}

// CheckNames refuses the first name the store cannot hold ([manifest.IsSecretName]) with a
// [*NameError].
func CheckNames(names ...string) error {
	for _, n := range names {
		if !manifest.IsSecretName(n) {
			return &NameError{Name: n}
		}
	}
	return nil
}

// TerminalPrompt returns a prompt that writes its label to w and reads a value without echo
// from the terminal fd. read is [term.ReadPassword] when nil; tests pass their own. The value
// is returned, never written anywhere.
func TerminalPrompt(fd int, w io.Writer, read func(fd int) ([]byte, error)) func(string) ([]byte, error) {
	if read == nil {
		read = term.ReadPassword
	}
	return func(label string) ([]byte, error) {
		fmt.Fprintf(w, "%s (typing is hidden): ", label)
		v, err := read(fd)
		fmt.Fprintln(w)
		if err != nil {
			return nil, fmt.Errorf("reading the prompt: %w", err)
		}
		return v, nil
	}
}
