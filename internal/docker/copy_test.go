package docker

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// entry is one tar entry for makeTar.
type entry struct {
	name     string
	typ      byte
	body     string
	linkname string
}

func makeTar(t *testing.T, entries ...entry) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: 0o4777, Size: int64(len(e.body)), Linkname: e.linkname}
		if e.typ != tar.TypeReg {
			hdr.Size = 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if hdr.Size > 0 {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return &buf
}

// tree lists what lies under dir: "path mode" for directories and "path mode body" for files.
func tree(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, _ := d.Info()
		line := rel + " " + info.Mode().String()
		if info.Mode().IsRegular() {
			body, _ := os.ReadFile(p)
			line += " " + string(body)
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

func TestExtractTarWritesFilesAndDirsOnly(t *testing.T) {
	dir := t.TempDir()
	archive := makeTar(t,
		entry{name: "out/", typ: tar.TypeDir},
		entry{name: "out/a.txt", typ: tar.TypeReg, body: "hi"},
		entry{name: "out/link", typ: tar.TypeSymlink, linkname: "/etc/passwd"},
		entry{name: "out/rel", typ: tar.TypeSymlink, linkname: "a.txt"},
		entry{name: "out/hard", typ: tar.TypeLink, linkname: "/etc/shadow"},
		entry{name: "out/fifo", typ: tar.TypeFifo},
		entry{name: "out/dev", typ: tar.TypeChar},
		entry{name: "out/./sub//b", typ: tar.TypeReg, body: "x"}, // parent created on demand
	)
	if err := extractTar(archive, dir, 1<<20, 100); err != nil {
		t.Fatalf("extractTar: %v", err)
	}
	want := "out drwx------\nout/a.txt -rw------- hi\nout/sub drwx------\nout/sub/b -rw------- x"
	if got := tree(t, dir); got != want {
		t.Errorf("extracted tree:\n%s\nwant:\n%s", got, want)
	}
}

func TestExtractTarRefusesHostileNames(t *testing.T) {
	tests := []struct {
		name  string
		entry entry
	}{
		{"absolute", entry{name: "/etc/cron.d/x", typ: tar.TypeReg, body: "x"}},
		{"dotdot", entry{name: "../escape", typ: tar.TypeReg, body: "x"}},
		{"inner dotdot", entry{name: "out/../../escape", typ: tar.TypeReg, body: "x"}},
		{"dotdot that stays inside", entry{name: "out/../x", typ: tar.TypeReg, body: "x"}},
		{"dir dotdot", entry{name: "../d/", typ: tar.TypeDir}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "dest")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			err := extractTar(makeTar(t, tc.entry), dir, 1<<20, 100)
			if err == nil {
				t.Fatalf("extractTar(%q) succeeded, want an error", tc.entry.name)
			}
			if got := tree(t, parent); got != "dest drwx------" {
				t.Errorf("after refusing %q the tree is:\n%s", tc.entry.name, got)
			}
		})
	}
}

func TestExtractTarDoesNotFollowEscapingSymlink(t *testing.T) {
	outside := t.TempDir()
	dir := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	err := extractTar(makeTar(t, entry{name: "out/planted", typ: tar.TypeReg, body: "x"}), dir, 1<<20, 100)
	if err == nil {
		t.Errorf("extractTar through a symlink leaving the destination succeeded, want an error")
	}
	if got := tree(t, outside); got != "" {
		t.Errorf("written outside the destination:\n%s", got)
	}
}

func TestExtractTarLimits(t *testing.T) {
	big := makeTar(t, entry{name: "a", typ: tar.TypeReg, body: "12345"}, entry{name: "b", typ: tar.TypeReg, body: "67890"})
	if err := extractTar(big, t.TempDir(), 8, 100); err == nil || !strings.Contains(err.Error(), "size limit") {
		t.Errorf("extractTar over the byte limit = %v, want a size limit error", err)
	}
	many := makeTar(t, entry{name: "a/", typ: tar.TypeDir}, entry{name: "b/", typ: tar.TypeDir}, entry{name: "c/", typ: tar.TypeDir})
	if err := extractTar(many, t.TempDir(), 8, 2); err == nil || !strings.Contains(err.Error(), "entries") {
		t.Errorf("extractTar over the entry limit = %v, want an entries error", err)
	}
}

func TestExtractTarGarbage(t *testing.T) {
	if err := extractTar(strings.NewReader(strings.Repeat("not a tar ", 100)), t.TempDir(), 1<<20, 100); err == nil {
		t.Errorf("extractTar(garbage) succeeded, want an error")
	}
}

func TestSafeName(t *testing.T) {
	tests := []struct {
		in, want string
		wantErr  bool
	}{
		{"out/a.txt", "out/a.txt", false},
		{"./", "", false},
		{"out//x/./y", "out/x/y", false},
		{"/abs", "", true},
		{"..", "", true},
		{"a/../b", "", true},
		{"a\x00b", "", true},
		{"..a/b..", "..a/b..", false},
	}
	for _, tc := range tests {
		got, err := safeName(tc.in)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("safeName(%q) = %q, %v, want %q, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}
