package secrets

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/config"
)

const fakeValue = "fake-value-0123456789"

func writeFile(t *testing.T, path, data string, mode os.FileMode) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReadFile(t *testing.T) {
	home := t.TempDir()
	tests := []struct {
		name, data string
		mode       os.FileMode
		loose      bool
		want       string
		wantErr    string
	}{
		{"private, newline stripped", fakeValue + "\n", 0o600, false, fakeValue, ""},
		{"crlf stripped", fakeValue + "\r\n", 0o400, false, fakeValue, ""},
		{"only one newline stripped", fakeValue + "\n\n", 0o600, false, "", "line break"},
		{"group-readable refused", fakeValue, 0o640, false, "", "group- or world-readable (mode 0640)"},
		{"world-readable refused", fakeValue, 0o604, false, "", "group- or world-readable (mode 0604)"},
		{"loose allowed", fakeValue, 0o644, true, fakeValue, ""},
		{"empty refused", "\n", 0o600, false, "", "empty"},
		{"interior newline refused", "a\nb", 0o600, false, "", "line break"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name := filepath.Join("sec", strings.Repeat("x", i+1))
			writeFile(t, filepath.Join(home, name), tc.data, tc.mode)
			s := &Sources{Home: home, AllowLoosePerms: tc.loose}
			got, err := s.ReadFile("~/" + name)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ReadFile = %q, %v; want error %q", got, err, tc.wantErr)
				}
				if strings.Contains(err.Error(), fakeValue) {
					t.Errorf("the error holds the value: %v", err)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Errorf("ReadFile = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	s := &Sources{Home: home}
	if _, err := s.ReadFile("~/nope"); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing file: %v", err)
	}
	if _, err := s.ReadFile(home); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("directory: %v", err)
	}
	if _, err := s.ReadFile(writeFile(t, filepath.Join(home, "loose"), "x", 0o644)); !errors.Is(err, ErrLoosePerms) {
		t.Errorf("ReadFile of a 0644 file = %v, want ErrLoosePerms", err)
	}
}

// TestReadFileSymlink: the mode checked is the target's.
func TestReadFileSymlink(t *testing.T) {
	dir := t.TempDir()
	target := writeFile(t, filepath.Join(dir, "target"), fakeValue, 0o644)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := (&Sources{}).ReadFile(link); !errors.Is(err, ErrLoosePerms) {
		t.Errorf("a private-looking symlink to a 0644 file = %v, want ErrLoosePerms", err)
	}
}

func TestReadEnv(t *testing.T) {
	env := map[string]string{"SET": fakeValue, "EMPTY": ""}
	s := &Sources{Env: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}
	if v, err := s.ReadEnv("SET"); err != nil || string(v) != fakeValue {
		t.Errorf("ReadEnv(SET) = %q, %v", v, err)
	}
	if _, err := s.ReadEnv("UNSET"); err == nil || !strings.Contains(err.Error(), "UNSET is not set") {
		t.Errorf("ReadEnv(UNSET) = %v", err)
	}
	if _, err := s.ReadEnv("EMPTY"); !errors.Is(err, ErrEmpty) {
		t.Errorf("ReadEnv(EMPTY) = %v, want ErrEmpty", err)
	}
}

func TestReadStdin(t *testing.T) {
	for in, want := range map[string]string{fakeValue + "\n\n": fakeValue, fakeValue: fakeValue, " padded \r\n": " padded "} {
		if got, err := ReadStdin(strings.NewReader(in)); err != nil || string(got) != want {
			t.Errorf("ReadStdin(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "\n", "\r\n\n"} {
		if _, err := ReadStdin(strings.NewReader(in)); !errors.Is(err, ErrEmpty) {
			t.Errorf("ReadStdin(%q) = %v, want ErrEmpty", in, err)
		}
	}
	if _, err := ReadStdin(strings.NewReader(strings.Repeat("x", MaxValue+10))); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ReadStdin(huge) = %v, want ErrTooLarge", err)
	}
	if _, err := ReadStdin(strings.NewReader("a\x00b")); !errors.Is(err, ErrLineBreak) {
		t.Errorf("ReadStdin(NUL) = %v, want ErrLineBreak", err)
	}
}

func TestReadDispatch(t *testing.T) {
	ctx := context.Background()
	var opRefs []string
	s := &Sources{
		Env: func(string) (string, bool) { return fakeValue, true },
		Op: func(_ context.Context, ref string) ([]byte, error) {
			opRefs = append(opRefs, ref)
			if strings.Contains(ref, "fail") {
				return nil, errors.New("op read op://v/fail/f: [ERROR] item not found")
			}
			return []byte(fakeValue), nil
		},
		Prompt: func(string) ([]byte, error) { return []byte(fakeValue), nil },
	}
	if v, err := s.Read(ctx, config.SecretMapping{Secret: "a", Op: "op://v/i/f"}, false); err != nil || string(v) != fakeValue {
		t.Errorf("op: %q, %v", v, err)
	}
	if _, err := s.Read(ctx, config.SecretMapping{Secret: "a", Op: "op://v/fail/f"}, false); err == nil || !strings.Contains(err.Error(), "item not found") {
		t.Errorf("failing op: %v", err)
	}
	if len(opRefs) != 2 || opRefs[0] != "op://v/i/f" {
		t.Errorf("op refs = %v", opRefs)
	}
	if _, err := s.Read(ctx, config.SecretMapping{Secret: "a", Source: config.SecretPrompt}, false); err == nil {
		t.Error("a prompt source was read without --interactive")
	}
	if v, err := s.Read(ctx, config.SecretMapping{Secret: "a", Source: config.SecretPrompt}, true); err != nil || string(v) != fakeValue {
		t.Errorf("prompt: %q, %v", v, err)
	}
	if _, err := s.Read(ctx, config.SecretMapping{Secret: "a", Source: config.SecretDocker}, true); !errors.Is(err, ErrExternal) {
		t.Errorf("docker source: %v, want ErrExternal", err)
	}
	if _, err := (&Sources{}).ReadPrompt("x"); !errors.Is(err, ErrNoTerminal) {
		t.Errorf("no prompt: %v", err)
	}
}

// TestRunOpMissing: with no op on PATH, the op source says so and nothing else breaks.
func TestRunOpMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	if _, err := (&Sources{}).ReadOp(context.Background(), "op://v/i/f"); !errors.Is(err, ErrNoOp) {
		t.Errorf("ReadOp without op = %v, want ErrNoOp", err)
	}
}
