package wsfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tree makes the hostile workspace the tests read: a file, a FIFO, a directory, and symlinks
// into it, out of it, to /dev/zero and to the FIFO.
func tree(t *testing.T) (ws, outside string) {
	t.Helper()
	ws, outside = t.TempDir(), t.TempDir()
	must(t, os.WriteFile(filepath.Join(ws, "file"), []byte("hello"), 0o644))
	must(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("s3cret"), 0o644))
	must(t, syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o644))
	must(t, os.Symlink("file", filepath.Join(ws, "link-in")))
	must(t, os.Symlink(filepath.Join(outside, "secret"), filepath.Join(ws, "link-out")))
	must(t, os.Symlink("/dev/zero", filepath.Join(ws, "zero")))
	must(t, os.Symlink("fifo", filepath.Join(ws, "link-fifo")))
	must(t, os.Mkdir(filepath.Join(ws, "dir"), 0o755))
	return ws, outside
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// within fails the test if f does not return within a second: a FIFO opened for reading blocks.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { f(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatalf("%s blocked", what)
	}
}

func TestRead(t *testing.T) {
	ws, _ := tree(t)
	tests := []struct {
		name   string
		follow bool
		want   string // content, or the error's text
	}{
		{"file", false, "hello"},
		{"link-in", false, "not a regular file: symlink"},
		{"link-in", true, "hello"},
		{"link-out", true, "s3cret"}, // Read follows as the system does; OpenIn is for the workspace
		{"zero", false, "not a regular file: symlink"},
		{"zero", true, "not a regular file: character device"},
		{"fifo", false, "not a regular file: FIFO"},
		{"link-fifo", true, "not a regular file: FIFO"},
		{"dir", false, "not a regular file: directory"},
		{"missing", false, "no such file"},
	}
	for _, tc := range tests {
		var data []byte
		var err error
		within(t, "Read("+tc.name+")", func() { data, err = Read(filepath.Join(ws, tc.name), 64, tc.follow) })
		got := string(data)
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("Read(%s, follow=%v) = %q, want %q", tc.name, tc.follow, got, tc.want)
		}
	}
}

func TestReadInStaysInside(t *testing.T) {
	ws, _ := tree(t)
	root, err := os.OpenRoot(ws)
	must(t, err)
	defer root.Close()
	tests := []struct{ name, want string }{
		{"file", "hello"},
		{"link-in", "hello"},
		{"link-out", "escapes"},
		{"zero", "escapes"},
		{"link-fifo", "not a regular file: FIFO"},
		{"../" + filepath.Base(ws) + "/file", "escapes"},
	}
	for _, tc := range tests {
		var data []byte
		var err error
		within(t, "ReadIn("+tc.name+")", func() { data, err = ReadIn(root, tc.name, 64) })
		got := string(data)
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("ReadIn(%s) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestReadBounded(t *testing.T) {
	ws, _ := tree(t)
	if _, err := Read(filepath.Join(ws, "file"), 4, false); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Read(5 bytes, max 4) error = %v, want ErrTooLarge", err)
	}
	if data, err := Read(filepath.Join(ws, "file"), 5, false); err != nil || string(data) != "hello" {
		t.Errorf("Read(5 bytes, max 5) = %q, %v", data, err)
	}
}

func TestNotRegularErrorIsTyped(t *testing.T) {
	ws, _ := tree(t)
	_, err := Open(filepath.Join(ws, "fifo"), false)
	var nr *NotRegularError
	if !errors.As(err, &nr) || Kind(nr.Mode) != "FIFO" {
		t.Errorf("Open(fifo) error = %v, want a NotRegularError for a FIFO", err)
	}
}
