package secrets

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/termtext"
)

// MaxValue is the largest value abox accepts from any source.
const MaxValue = 64 << 10

// Errors of the sources. None of them, and no error of this package, holds a value.
var (
	ErrEmpty     = errors.New("the value is empty")
	ErrLineBreak = errors.New("the value holds a line break or a NUL byte, which the gateway's secrets file and docker's env files cannot carry")
	ErrTooLarge  = fmt.Errorf("the value is larger than %d KiB", MaxValue>>10)
	// ErrLoosePerms is a file source that other users may read.
	ErrLoosePerms = errors.New("group- or world-readable")
	// ErrNoOp is an op source on a host without the 1Password CLI.
	ErrNoOp = errors.New("the 1Password CLI (op) is not installed")
	// ErrNoTerminal is a prompt source without a terminal to type on.
	ErrNoTerminal = errors.New("no terminal to prompt on")
	// ErrExternal is a source abox does not read: the value is already in the store.
	ErrExternal = errors.New("set outside abox; only its presence in the store is checked")
)

// CheckValue reports why v cannot be stored: empty, too large, or holding a line break or NUL.
func CheckValue(v []byte) error {
	switch {
	case len(v) == 0:
		return ErrEmpty
	case len(v) > MaxValue:
		return ErrTooLarge
	case bytes.ContainsAny(v, "\r\n\x00"):
		return ErrLineBreak
	}
	return nil
}

// Sources reads values from where the user keeps them.
type Sources struct {
	Env  func(string) (string, bool) // the host environment
	Home string                      // for ~ in file paths
	// Op runs `op read --no-newline ref` and returns its stdout; nil runs the op on PATH.
	Op func(ctx context.Context, ref string) ([]byte, error)
	// Prompt reads a value typed without echo; nil when there is no terminal.
	Prompt func(label string) ([]byte, error)
	// AllowLoosePerms accepts file sources that other users may read.
	AllowLoosePerms bool
}

// Read returns the value of m from its source. Prompt sources are read only when prompt is set;
// docker sources never are ([ErrExternal]).
func (s *Sources) Read(ctx context.Context, m config.SecretMapping, prompt bool) ([]byte, error) {
	switch m.Kind() {
	case config.SecretOp:
		return s.ReadOp(ctx, m.Op)
	case config.SecretFile:
		return s.ReadFile(m.File)
	case config.SecretEnv:
		return s.ReadEnv(m.Env)
	case config.SecretPrompt:
		if !prompt {
			return nil, errors.New("typed in at a prompt; run with --interactive to enter it")
		}
		return s.ReadPrompt("value of " + m.Secret)
	case config.SecretDocker:
		return nil, ErrExternal
	}
	return nil, fmt.Errorf("unknown source %q", m.Kind())
}

// SourceRef is what secrets.json records about where m's value came from: the op reference,
// the file's path or the variable's name. Never a value.
func SourceRef(m config.SecretMapping) string {
	switch m.Kind() {
	case config.SecretOp:
		return m.Op
	case config.SecretFile:
		return m.File
	case config.SecretEnv:
		return m.Env
	}
	return ""
}

// ReadFile reads a file source: refused when group or others have any permission bit (unless
// AllowLoosePerms), one trailing newline stripped. The mode checked is the opened file's, so a
// swapped symlink cannot pass one file's check and read another.
func (s *Sources) ReadFile(path string) ([]byte, error) {
	p := paths.ExpandHome(path, s.Home)
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("file %s does not exist", p)
	}
	if err != nil {
		return nil, fmt.Errorf("file %s: %w", p, errors.Unwrap(err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("file %s: %w", p, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("file %s is not a regular file", p)
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 && !s.AllowLoosePerms {
		return nil, fmt.Errorf("file %s is %w (mode %04o)", p, ErrLoosePerms, perm)
	}
	data, err := readCapped(f)
	if err != nil {
		return nil, fmt.Errorf("file %s: %w", p, err)
	}
	data = bytes.TrimSuffix(data, []byte("\n"))
	data = bytes.TrimSuffix(data, []byte("\r"))
	return data, wrapValue(CheckValue(data), "file "+p)
}

// ReadEnv reads a host environment variable; unset and empty are errors.
func (s *Sources) ReadEnv(name string) ([]byte, error) {
	v, ok := s.Env(name)
	if !ok {
		return nil, fmt.Errorf("environment variable %s is not set", name)
	}
	return []byte(v), wrapValue(CheckValue([]byte(v)), "environment variable "+name)
}

// ReadStdin reads a value piped on r, trailing newlines stripped.
func ReadStdin(r io.Reader) ([]byte, error) {
	data, err := readCapped(r)
	if err != nil {
		return nil, fmt.Errorf("reading stdin: %w", err)
	}
	data = bytes.TrimRight(data, "\r\n")
	return data, wrapValue(CheckValue(data), "stdin")
}

// ReadPrompt asks for a value on the terminal, without echo.
func (s *Sources) ReadPrompt(label string) ([]byte, error) {
	if s.Prompt == nil {
		return nil, ErrNoTerminal
	}
	v, err := s.Prompt(label)
	if err != nil {
		return nil, err
	}
	return v, wrapValue(CheckValue(v), "the prompt")
}

// ReadOp reads a 1Password reference with `op read --no-newline`. The reference is in op's
// argv; the value comes back on its stdout.
func (s *Sources) ReadOp(ctx context.Context, ref string) ([]byte, error) {
	run := s.Op
	if run == nil {
		run = runOp
	}
	v, err := run(ctx, ref)
	if err != nil {
		return nil, err
	}
	return v, wrapValue(CheckValue(v), "op "+ref)
}

// runOp runs the op on PATH. op may wait for a biometric or password unlock, hence the long
// timeout. Its stderr is quoted in the error (op never echoes a value there), made printable.
func runOp(ctx context.Context, ref string) ([]byte, error) {
	bin, err := exec.LookPath("op")
	if err != nil {
		return nil, ErrNoOp
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "read", "--no-newline", ref)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(strings.SplitN(stderr.String(), "\n", 2)[0])
		if len(msg) > 200 {
			msg = msg[:200]
		}
		if msg == "" {
			msg = err.Error()
		}
		return nil, fmt.Errorf("op read %s: %s", ref, termtext.Line(msg))
	}
	return stdout.Bytes(), nil
}

func readCapped(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxValue+2))
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimRight(data, "\r\n")) > MaxValue {
		return nil, ErrTooLarge
	}
	return data, nil
}

func wrapValue(err error, from string) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", from, err)
}

// Given is where `abox secrets set` takes one value from: File, else Env, else Stdin when set,
// else the no-echo prompt.
type Given struct {
	File, Env string
	Stdin     io.Reader
}

// ReadGiven reads the value g names, and says where it came from as secrets.json records it:
// the source kind and its reference (a file's absolute path, a variable's name). label is the
// prompt's.
func (s *Sources) ReadGiven(g Given, label string) (value []byte, source, ref string, err error) {
	switch {
	case g.File != "":
		value, err = s.ReadFile(g.File)
		source, ref = "file", g.File
		if abs, aerr := filepath.Abs(paths.ExpandHome(g.File, s.Home)); aerr == nil {
			ref = abs
		}
	case g.Env != "":
		value, err = s.ReadEnv(g.Env)
		source, ref = "env", g.Env
	case g.Stdin != nil:
		value, err = ReadStdin(g.Stdin)
		source = "stdin"
	default:
		value, err = s.ReadPrompt(label)
		source = "prompt"
	}
	return value, source, ref, err
}
