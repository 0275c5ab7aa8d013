package netd

import (
	"os"
	"path/filepath"
	"testing"
)

// TestContainerMemoryLimit: the limit is read from the first cgroup file there is, in bytes;
// "max" (v2) and v1's page-rounded largest value mean none, and so does a file that is not a
// number.
func TestContainerMemoryLimit(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(content), 0o600)
		return p
	}
	missing := filepath.Join(dir, "missing")
	for _, tc := range []struct {
		files []string
		want  int64
	}{
		{[]string{file("v2", "268435456\n")}, 256 << 20},
		{[]string{missing, file("v1", "268435456\n")}, 256 << 20},
		{[]string{file("v2max", "max\n"), file("v1b", "268435456\n")}, 0},
		{[]string{file("v1none", "9223372036854771712\n")}, 0},
		{[]string{file("junk", "lots")}, 0},
		{[]string{missing}, 0},
	} {
		if got := containerMemoryLimit(tc.files); got != tc.want {
			t.Errorf("containerMemoryLimit(%v) = %d, want %d", tc.files, got, tc.want)
		}
	}
}
