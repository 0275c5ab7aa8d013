package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestIdleSpares: the spare netds the projects' records name, every project's; a project
// without a record, or with one that does not read, names none.
func TestIdleSpares(t *testing.T) {
	state := t.TempDir()
	write := func(hash, content string) {
		dir := filepath.Join(state, "projects", hash)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if content != "" {
			if err := os.WriteFile(filepath.Join(dir, spareRecordFile), []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	write("aaaaaaaaaaaa", `{"run_id":"r1","netd":"abox-netd-a-r1"}`)
	write("bbbbbbbbbbbb", `{"run_id":"r2","netd":"abox-netd-b-r2"}`)
	write("cccccccccccc", "")          // no spare
	write("dddddddddddd", "{not json") // unreadable
	got, err := IdleSpares(state)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"abox-netd-a-r1", "abox-netd-b-r2"}) {
		t.Errorf("IdleSpares = %v", got)
	}
}
