package secrets

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/statefs"
	"github.com/aboxhq/abox/internal/termtext"
)

// Store kinds.
const (
	KindAbox    = "abox"
	KindDesktop = "docker-desktop"
)

// Errors of the stores.
var (
	ErrNotStored = errors.New("not in the store")
	// ErrNotReadable is Docker Desktop's store: it hands values to containers, never back.
	ErrNotReadable = errors.New("the store does not give values back")
)

// Store holds secret values.
type Store interface {
	// Kind is KindAbox or KindDesktop.
	Kind() string
	// Claim says what the store protects a value against, for doctor.
	Claim() string
	// Set stores value under name; the value travels on a pipe or into a 0600 file.
	Set(ctx context.Context, name string, value []byte) error
	// Remove deletes name; a missing name is not an error.
	Remove(ctx context.Context, name string) error
	// List returns the stored names, sorted.
	List(ctx context.Context) ([]string, error)
	// Value returns the stored value, for drift detection ([ErrNotReadable] from Desktop).
	Value(ctx context.Context, name string) ([]byte, error)
	// Deliver returns what a consumer gets for a stored name: the value itself, or an se://
	// reference the Docker daemon resolves when it starts the container.
	Deliver(ctx context.Context, name string) ([]byte, error)
}

// FileStore is abox's store on plain Docker Engine: one 0600 file per secret in a 0700
// directory. Secret names ([manifest.IsSecretName]) are safe file names: no slash, never "."
// or "..".
type FileStore struct{ Dir string }

// Kind implements [Store].
func (s *FileStore) Kind() string { return KindAbox }

// Claim implements [Store].
func (s *FileStore) Claim() string {
	return "plaintext files (0600) in " + s.Dir + " (0700), and copies in each gateway's secrets.env: " +
		"protected by file permissions only, so any process running as you, root, and anything that reads " +
		"your backups can read them; Docker Desktop's keychain-backed store is not available on this host"
}

// Set implements [Store].
func (s *FileStore) Set(_ context.Context, name string, value []byte) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := CheckValue(value); err != nil {
		return err
	}
	if err := s.ensureDir(); err != nil {
		return err
	}
	return statefs.WriteFile(filepath.Join(s.Dir, name), value, statefs.PrivateMode)
}

// ensureDir creates the store directory 0700, and tightens one that was loosened.
func (s *FileStore) ensureDir() error {
	if err := statefs.MkdirAll(s.Dir); err != nil {
		return err
	}
	st, err := os.Stat(s.Dir)
	if err != nil {
		return fmt.Errorf("secrets store: %w", err)
	}
	if st.Mode().Perm() != statefs.DirMode {
		if err := os.Chmod(s.Dir, statefs.DirMode); err != nil {
			return fmt.Errorf("secrets store: %w", err)
		}
	}
	return nil
}

// Remove implements [Store].
func (s *FileStore) Remove(_ context.Context, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(s.Dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing %s from the store: %w", name, err)
	}
	return nil
}

// List implements [Store].
func (s *FileStore) List(context.Context) ([]string, error) {
	entries, err := os.ReadDir(s.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing the secrets store: %w", err)
	}
	var out []string
	for _, e := range entries {
		if e.Type().IsRegular() && manifest.IsSecretName(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// Value implements [Store].
func (s *FileStore) Value(_ context.Context, name string) ([]byte, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	v, err := os.ReadFile(filepath.Join(s.Dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", name, ErrNotStored)
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s from the store: %w", name, errors.Unwrap(err))
	}
	return v, nil
}

// Deliver implements [Store]: the value itself.
func (s *FileStore) Deliver(ctx context.Context, name string) ([]byte, error) {
	return s.Value(ctx, name)
}

// DesktopStore is Docker Desktop's secrets engine, driven through `docker mcp secret`.
type DesktopStore struct{ Docker *docker.Client }

// Kind implements [Store].
func (s *DesktopStore) Kind() string { return KindDesktop }

// Claim implements [Store].
func (s *DesktopStore) Claim() string {
	return "Docker Desktop's secrets engine (the OS keychain): abox writes no value to disk, and the daemon " +
		"resolves se:// references when it starts a container"
}

// Set implements [Store]: `docker mcp secret set NAME` with the value on stdin.
func (s *DesktopStore) Set(ctx context.Context, name string, value []byte) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := CheckValue(value); err != nil {
		return err
	}
	_, err := s.Docker.Run(ctx, docker.Invocation{Args: []string{"mcp", "secret", "set", name}, Stdin: bytes.NewReader(value)})
	return err
}

// Remove implements [Store].
func (s *DesktopStore) Remove(ctx context.Context, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	names, err := s.List(ctx)
	if err != nil || !contains(names, name) {
		return err
	}
	_, err = s.Docker.Run(ctx, docker.Invocation{Args: []string{"mcp", "secret", "rm", name}})
	return err
}

// List implements [Store]: `docker mcp secret ls --json`, namespaces stripped.
func (s *DesktopStore) List(ctx context.Context) ([]string, error) {
	res, err := s.Docker.Run(ctx, docker.Invocation{Args: []string{"mcp", "secret", "ls", "--json"}})
	if err != nil {
		return nil, err
	}
	var items []struct{ Name string }
	if err := json.Unmarshal(bytes.TrimSpace(res.Stdout), &items); err != nil {
		return nil, fmt.Errorf("docker mcp secret ls: decoding output: %w", err)
	}
	var out []string
	for _, it := range items {
		if n := strings.TrimPrefix(it.Name, "docker/mcp/"); manifest.IsSecretName(n) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Value implements [Store]: Desktop never gives a value back.
func (s *DesktopStore) Value(context.Context, string) ([]byte, error) { return nil, ErrNotReadable }

// Deliver implements [Store]: an se:// reference, resolved by Docker Desktop at container start.
func (s *DesktopStore) Deliver(_ context.Context, name string) ([]byte, error) {
	return []byte(DesktopRef(name)), nil
}

// DesktopRef is the se:// reference Docker Desktop resolves to the stored value of name.
func DesktopRef(name string) string { return "se://docker/mcp/" + name }

func checkName(name string) error {
	if !manifest.IsSecretName(name) {
		return fmt.Errorf("%q is not a valid secret name (letters, digits, '.', '_', '-'; starting with a letter or digit)", termtext.Line(name))
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
