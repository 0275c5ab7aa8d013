package statefs

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestWriteFileAtomicAndPrivate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "f")
	if err := WriteFile(path, []byte("one"), PrivateMode); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(filepath.Dir(path))
	if st.Mode().Perm() != DirMode {
		t.Errorf("created dir mode %v, want %v", st.Mode().Perm(), DirMode)
	}
	if err := WriteFile(path, []byte("two"), PrivateMode); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	fi, _ := os.Stat(path)
	if string(got) != "two" || fi.Mode().Perm() != PrivateMode {
		t.Errorf("file = %q mode %v, want two 0600", got, fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
	// A read-only target is replaced, not refused.
	os.Chmod(path, 0o444)
	if err := WriteFile(path, []byte("three"), 0o444); err != nil {
		t.Errorf("replacing a read-only file: %v", err)
	}
}

func TestWriteFileFailureKeepsOldContent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	WriteFile(path, []byte("old"), PrivateMode)
	// The target is a directory: the rename fails, and nothing is half-written.
	if err := WriteFile(dir, []byte("new"), PrivateMode); err == nil {
		t.Fatal("writing over a directory succeeded")
	}
	if got, _ := os.ReadFile(path); string(got) != "old" {
		t.Errorf("old content lost: %q", got)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}

func TestAppendLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.jsonl")
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); AppendLine(path, []byte(`{"k":"v"}`)) }()
	}
	wg.Wait()
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 50 {
		t.Fatalf("got %d lines, want 50", len(lines))
	}
	for _, l := range lines {
		if l != `{"k":"v"}` {
			t.Errorf("interleaved line %q", l)
		}
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != PrivateMode {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
}

func TestLockSerialises(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	unlock, err := Lock(path)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan time.Time, 1)
	go func() {
		u2, err := Lock(path)
		if err != nil {
			t.Error(err)
			return
		}
		got <- time.Now()
		u2()
	}()
	time.Sleep(100 * time.Millisecond)
	released := time.Now()
	unlock()
	if at := <-got; at.Before(released) {
		t.Error("second holder acquired the lock before the first released it")
	}
}
