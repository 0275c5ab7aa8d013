package dockertest

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rogpeppe/go-internal/testscript"
)

var update = flag.Bool("update", false, "rewrite the testscript files with the actual output")

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){"docker": FakeBinary})
}

func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		UpdateScripts:       *update,
	})
}

// fakeEnv is an environment for fakeMain.
type fakeEnv map[string]string

func (e fakeEnv) get(k string) string { return e[k] }

// call runs fakeMain once and returns its stdout, stderr and status.
func (e fakeEnv) call(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errs bytes.Buffer
	code := fakeMain(args, strings.NewReader(stdin), &out, &errs, e.get)
	return out.String(), errs.String(), code
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestFakeMainReplies(t *testing.T) {
	dir := t.TempDir()
	replies := filepath.Join(dir, "replies")
	writeFile(t, filepath.Join(dir, "gw.json"), `{"Id":"gw"}`)
	writeFile(t, replies, `# replies for the test
> container inspect abox-gw-dev
stdout-file: gw.json

> network create
stdout: net-1
once
> network create
stderr: Error response from daemon: network with name abox-net already exists
exit 1
>
stdout: default
`)
	env := fakeEnv{RepliesEnv: replies, "WORK": dir}
	tests := []struct {
		args, stdin, wantOut, wantErr string
		wantCode                      int
	}{
		{"container inspect abox-gw-dev", "", `{"Id":"gw"}`, "", 0},
		{"network create abox-net", "", "net-1\n", "", 0},
		{"network create abox-net", "", "", "Error response from daemon: network with name abox-net already exists\n", 1},
		{"secret set op", "s3cret", "default\n", "", 0},
	}
	for _, tc := range tests {
		out, errs, code := env.call(t, tc.stdin, strings.Fields(tc.args)...)
		if out != tc.wantOut || errs != tc.wantErr || code != tc.wantCode {
			t.Errorf("docker %s = %q, %q, %d, want %q, %q, %d", tc.args, out, errs, code, tc.wantOut, tc.wantErr, tc.wantCode)
		}
	}
	calls, err := ReadLog(filepath.Join(dir, "docker.log"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Call{
		{Args: []string{"container", "inspect", "abox-gw-dev"}},
		{Args: []string{"network", "create", "abox-net"}},
		{Args: []string{"network", "create", "abox-net"}},
		{Args: []string{"secret", "set", "op"}, Stdin: []byte("s3cret")},
	}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("ReadLog (-want +got):\n%s", diff)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "docker.log"))
	if strings.Contains(string(raw), "s3cret") {
		t.Errorf("stdin appears in clear in the log:\n%s", raw)
	}
}

func TestFakeMainWithoutReplies(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "calls.log")
	env := fakeEnv{LogEnv: logPath}
	_, errs, code := env.call(t, "", "ps")
	if code != 125 || !strings.Contains(errs, `fake docker: no reply for "ps"`) {
		t.Errorf("unmatched = %q, %d, want exit 125 and a clear message", errs, code)
	}
	if calls, err := ReadLog(logPath); err != nil || len(calls) != 1 {
		t.Errorf("ReadLog = %v, %v, want the one call", calls, err)
	}
}

func TestFakeMainNeedsALog(t *testing.T) {
	_, errs, code := fakeEnv{}.call(t, "", "ps")
	if code != 125 || !strings.Contains(errs, LogEnv) {
		t.Errorf("without a log = %q, %d, want exit 125 naming %s", errs, code, LogEnv)
	}
}

func TestFakeMainBadReplies(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "replies"), "> ps\nexit two\n")
	_, errs, code := fakeEnv{RepliesEnv: filepath.Join(dir, "replies"), "WORK": dir}.call(t, "", "ps")
	if code != 125 || !strings.Contains(errs, "replies:2:") {
		t.Errorf("bad replies = %q, %d, want exit 125 with the location", errs, code)
	}
}

func TestParseRepliesErrors(t *testing.T) {
	tests := []struct{ name, data, want string }{
		{"directive first", "stdout: x\n", "r:1: directive before"},
		{"unknown", "> ps\nstdot: x\n", `r:2: unknown directive "stdot: x"`},
		{"bad exit", "> ps\nexit x\n", "r:2:"},
		{"bad sleep", "> ps\nsleep forever\n", "r:2:"},
		{"missing file", "> ps\nstdout-file: nope.json\n", "r:2:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseReplies([]byte(tc.data), "r", t.TempDir())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("parseReplies(%q) = %v, want an error containing %q", tc.data, err, tc.want)
			}
		})
	}
}

func TestParseReplies(t *testing.T) {
	blocks, err := parseReplies([]byte("> ps -a\nstdout:\nstdout:  two spaces\nstderr: e\nexit 3\nsleep 1ms\nonce\n>\n"), "r", "")
	if err != nil {
		t.Fatal(err)
	}
	b := blocks[0]
	if b.prefix != "ps -a" || b.stdout.String() != "\n two spaces\n" || b.stderr.String() != "e\n" ||
		b.exitCode != 3 || b.sleep.Milliseconds() != 1 || !b.once || b.line != 1 {
		t.Errorf("block = %+v", b)
	}
	if len(blocks) != 2 || blocks[1].prefix != "" || blocks[1].line != 8 {
		t.Errorf("default block = %+v", blocks[1:])
	}
}

func TestReadLogErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	if calls, err := ReadLog(path); calls != nil || err != nil {
		t.Errorf("ReadLog(missing) = %v, %v, want an empty log", calls, err)
	}
	for _, bad := range []string{"not json\n", `["ps"] junk` + "\n", `["ps"] <!!!` + "\n"} {
		writeFile(t, path, bad)
		if _, err := ReadLog(path); err == nil {
			t.Errorf("ReadLog(%q) succeeded, want an error", bad)
		}
	}
}
