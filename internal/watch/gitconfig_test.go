package watch

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// kv is an entry as the tables write it: "key=value", or "key" for a bare boolean.
func kv(es []Entry) []string {
	out := []string{}
	for _, e := range es {
		if e.NoValue {
			out = append(out, e.Key)
		} else {
			out = append(out, e.Key+"="+e.Value)
		}
	}
	return out
}

// configCases are spellings git accepts, several of them chosen to hide a key from a naive
// reader; want is what git itself reads (checked against git by TestParseConfigMatchesGit).
var configCases = []struct {
	name, in string
	want     []string
	wantErr  bool
}{
	{name: "plain", in: "[core]\n\thooksPath = .githooks\n", want: []string{"core.hookspath=.githooks"}},
	{name: "section and key case", in: "[Core]\nHooksPath=/tmp/h\n", want: []string{"core.hookspath=/tmp/h"}},
	{name: "tabs and blanks everywhere", in: "\t [core]\t\n\t\t  fsmonitor \t=\t  run-me  \n", want: []string{"core.fsmonitor=run-me"}},
	{name: "deeper indent is a new key", in: "[core]\n\teditor = vi\n\t\t\thooksPath = /x\n", want: []string{"core.editor=vi", "core.hookspath=/x"}},
	{name: "unquoted tab inside a value is a space", in: "[core]\n\tsshCommand = ssh\t-i\r key\n", want: []string{"core.sshcommand=ssh -i  key"}},
	{name: "key on the header line", in: "[core] sshCommand = ssh -i key\n", want: []string{"core.sshcommand=ssh -i key"}},
	{name: "continuation", in: "[core]\n\tpager = less \\\n -R\n", want: []string{"core.pager=less  -R"}},
	{name: "continuation hides a key name", in: "[core]\n\tx = a \\\nhooksPath = y\n", want: []string{"core.x=a hooksPath = y"}},
	{name: "comments", in: "# [core]\n; hooksPath = no\n[core] ; comment\n\teditor = vim # trailing\n", want: []string{"core.editor=vim"}},
	{name: "quoted value keeps comment chars and blanks", in: "[alias]\n\tx = \"!sh -c 'a; b # c'  \"\n", want: []string{"alias.x=!sh -c 'a; b # c'  "}},
	{name: "escapes", in: "[a]\n\tb = x\\ty\\\\z\\\"q\\n\n", want: []string{"a.b=x\ty\\z\"q\n"}},
	{name: "quoted subsection keeps case", in: "[diff \"PDF\"]\n\ttextconv = pdftotext\n", want: []string{"diff.PDF.textconv=pdftotext"}},
	{name: "escaped subsection", in: "[filter \"a\\\"b\\\\c\"]\n\tclean = x\n", want: []string{"filter.a\"b\\c.clean=x"}},
	{name: "deprecated dotted subsection is lower-cased", in: "[Filter.LFS]\n\tSmudge = x\n", want: []string{"filter.lfs.smudge=x"}},
	{name: "core with a subsection", in: "[core \"x\"]\n\thooksPath = /h\n", want: []string{"core.x.hookspath=/h"}},
	{name: "includeIf", in: "[includeIf \"gitdir:~/w/\"]\n\tpath = ../evil\n", want: []string{"includeif.gitdir:~/w/.path=../evil"}},
	{name: "bare boolean", in: "[core]\n\tbare\n\tfsmonitor\n", want: []string{"core.bare", "core.fsmonitor"}},
	{name: "empty value", in: "[core]\n\tpager =\n", want: []string{"core.pager="}},
	{name: "crlf", in: "[core]\r\n\thooksPath = /h\r\n", want: []string{"core.hookspath=/h"}},
	{name: "lone cr is a blank", in: "[core]\r\thooksPath = /h\n", want: []string{"core.hookspath=/h"}},
	{name: "bom", in: "\xef\xbb\xbf[core]\nhooksPath = /h\n", want: []string{"core.hookspath=/h"}},
	{name: "no final newline", in: "[core]\nhooksPath = /h", want: []string{"core.hookspath=/h"}},
	{name: "backslash at the end of the file", in: "[core]\nhooksPath = /h\\", want: []string{"core.hookspath=/h"}},
	{name: "two sections one line", in: "[a]x=1 \n[b]y=2\n", want: []string{"a.x=1", "b.y=2"}},
	{name: "dashes and digits in names", in: "[url \"git@evil:\"]\n\tinsteadOf = https://github.com/\n[x-1]\n\tk-2 = v\n",
		want: []string{"url.git@evil:.insteadof=https://github.com/", "x-1.k-2=v"}},
	{name: "quotes in the middle", in: "[core]\n\thooksPath = \"/a\" \"b\"x\n", want: []string{"core.hookspath=/a bx"}},
	{name: "backslash in a comment does not continue", in: "[core] # a \\\n\thooksPath = /h\n", want: []string{"core.hookspath=/h"}},
	{name: "value with an equals sign", in: "[alias]\n\tx = !git -c core.pager=evil log\n", want: []string{"alias.x=!git -c core.pager=evil log"}},
	{name: "section header with blanks before the quote", in: "[credential \t \"https://x\"]\n\thelper = h\n", want: []string{"credential.https://x.helper=h"}},
	{name: "underscore is not a key character", in: "[core]\n\thooks_path = x\n", wantErr: true},
	{name: "bad escape", in: "[a]\n\tb = \\q\n", wantErr: true},
	{name: "unterminated quote", in: "[a]\n\tb = \"x\n", wantErr: true},
	{name: "garbage line", in: "[a]\n\t=x\n", wantErr: true},
	{name: "comment after a bare key", in: "[a]\n\tb # c\n", wantErr: true},
	{name: "space before the closing bracket", in: "[a \"b\" ]\n", wantErr: true},
	{name: "newline in subsection", in: "[a \"b\nc\"]\n", wantErr: true},
	{name: "unclosed header", in: "[core", wantErr: true},
	{name: "entries before an error are kept", in: "[core]\nhooksPath=/h\n[bad\n", want: []string{"core.hookspath=/h"}, wantErr: true},
}

func TestParseConfig(t *testing.T) {
	for _, tc := range configCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseConfig([]byte(tc.in))
			if (err != nil) != tc.wantErr {
				t.Fatalf("ParseConfig(%q) error = %v, want error %v", tc.in, err, tc.wantErr)
			}
			want := tc.want
			if want == nil {
				want = []string{}
			}
			if diff := cmp.Diff(want, kv(got)); diff != "" {
				t.Errorf("ParseConfig(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

// TestParseConfigMatchesGit reads every table case with git itself, when git is installed, and
// asserts that abox reads exactly what git reads. git is never run on anything but these files.
func TestParseConfigMatchesGit(t *testing.T) {
	git := gitReader(t)
	for _, tc := range configCases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := git(t, []byte(tc.in))
			if (err != nil) != tc.wantErr {
				t.Fatalf("git config --list: err = %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			got, _ := ParseConfig([]byte(tc.in))
			if diff := cmp.Diff(gitList(out), kv(got)); diff != "" {
				t.Errorf("abox and git disagree on %q (-git +abox):\n%s", tc.in, diff)
			}
		})
	}
}

// gitReader returns a function that reads a config file with git itself (`git config --file
// F --null --list`, no system or global config). git is the oracle of these tests, and it is
// installed wherever they run (CI installs it), so its absence fails them rather than skip.
func gitReader(t testing.TB) func(testing.TB, []byte) ([]byte, error) {
	t.Helper()
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("git is the oracle of this test and is not installed: %v", err)
	}
	return func(t testing.TB, data []byte) ([]byte, error) {
		t.Helper()
		dir := t.TempDir()
		f := filepath.Join(dir, "config")
		if err := os.WriteFile(f, data, 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(gitBin, "config", "--file", f, "--null", "--list")
		cmd.Env = []string{"HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}
		out, err := cmd.Output()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("running git: %v", err)
		}
		return out, err
	}
}

// gitList decodes `git config --null --list`: "key\nvalue\x00", or "key\x00" for a boolean.
func gitList(out []byte) []string {
	res := []string{}
	for _, rec := range bytes.Split(out, []byte{0}) {
		if len(rec) == 0 {
			continue
		}
		k, v, ok := strings.Cut(string(rec), "\n")
		if ok {
			res = append(res, k+"="+v)
		} else {
			res = append(res, k)
		}
	}
	return res
}

func TestEntryParts(t *testing.T) {
	tests := []struct{ key, section, sub, name string }{
		{"core.hookspath", "core", "", "hookspath"},
		{"diff.PDF.textconv", "diff", "PDF", "textconv"},
		{"includeif.gitdir:~/a.b/.path", "includeif", "gitdir:~/a.b/", "path"},
		{"bare", "bare", "", "bare"},
	}
	for _, tc := range tests {
		e := Entry{Key: tc.key}
		if e.Section() != tc.section || e.Subsection() != tc.sub || e.Name() != tc.name {
			t.Errorf("Entry{%q} = (%q, %q, %q), want (%q, %q, %q)", tc.key, e.Section(), e.Subsection(), e.Name(), tc.section, tc.sub, tc.name)
		}
	}
}

func TestDangerous(t *testing.T) {
	tests := []struct {
		key, value string
		want       bool
	}{
		{"core.hookspath", "x", true},
		{"core.fsmonitor", "x", true},
		{"core.sshcommand", "x", true},
		{"core.pager", "x", true},
		{"core.editor", "x", true},
		{"core.askpass", "x", true},
		{"sequence.editor", "x", true},
		{"diff.pdf.textconv", "x", true},
		{"diff.external", "x", true},
		{"filter.lfs.clean", "x", true},
		{"filter.lfs.smudge", "x", true},
		{"filter.lfs.process", "x", true},
		{"merge.ours.driver", "x", true},
		{"gpg.program", "x", true},
		{"gpg.ssh.program", "x", true},
		{"gpg.ssh.defaultkeycommand", "x", true},
		{"interactive.difffilter", "x", true},
		{"man.mine.cmd", "x", true},
		{"guitool.x.cmd", "x", true},
		{"imap.tunnel", "x", true},
		{"trailer.sign.cmd", "x", true},
		{"trailer.sign.command", "x", true},
		{"sendemail.sendmailcmd", "x", true},
		{"instaweb.httpd", "x", true},
		{"gpg.format", "ssh", false},
		{"pager.log", "x", true},
		{"alias.st", "status", true},
		{"include.path", "x", true},
		{"includeif.gitdir:/x/.path", "x", true},
		{"credential.helper", "x", true},
		{"credential.https://x.username", "x", true},
		{"url.git@evil:.insteadof", "x", true},
		{"url.git@evil:.pushinsteadof", "x", true},
		{"remote.origin.uploadpack", "x", true},
		{"remote.origin.receivepack", "x", true},
		{"core.x.hookspath", "x", true},
		{"remote.origin.url", "ext::sh -c evil", true},
		{"remote.origin.url", "https://github.com/a/b", false},
		// issue 34: what redirects where git reads or writes, and remotes that run here
		{"core.worktree", "/home/user", true},
		{"core.excludesfile", "x", true},
		{"core.attributesfile", "x", true},
		{"extensions.worktreeconfig", "true", true},
		{"commit.template", "~/.ssh/id_ed25519", true},
		{"format.signaturefile", "x", true},
		{"format.outputdirectory", "x", true},
		{"gpg.ssh.allowedsignersfile", "x", true},
		{"http.proxy", "http://evil:3128", true},
		{"http.https://x.cookiefile", "x", true},
		{"http.curloptresolve", "github.com:443:203.0.113.1", true},
		{"remote.origin.proxy", "x", true},
		{"instaweb.modulepath", "x", true},
		{"init.templatedir", "x", true},
		{"remote.origin.pushurl", ".cache/mirror.git", true},
		{"remote.origin.url", "/srv/r.git", true},
		{"remote.origin.url", "evil::x", true},
		{"remote.origin.pushurl", "git@github.com:a/b", false},
		{"submodule.lib.url", "../lib.git", true},
		{"submodule.lib.url", "https://github.com/a/lib", false},
		{"remote.pushdefault", "origin", false},
		{"branch.main.pushremote", "origin", false},
		{"extensions.objectformat", "sha256", false},
		{"commit.gpgsign", "true", false},
		{"core.bare", "false", false},
		{"user.email", "x", false},
		{"branch.main.remote", "origin", false},
		{"diff.renames", "true", false},
		// red team 4: keys of other documentation (git-archive(1), git-svn(1), git-lfs-config(5))
		// and of git-config(1)'s that hide files or let a machine in the middle read the traffic
		{"tar.tgz.command", "sh evil.sh", true},
		{"tar.umask", "0002", false},
		{"svn.authorsprog", "./evil", true},
		{"lfs.url", "https://lfs.evil.test/", true},
		{"lfs.pushurl", "https://lfs.evil.test/", true},
		{"lfs.standalonetransferagent", "evil", true},
		{"lfs.https://x.standalonetransferagent", "evil", true},
		{"lfs.customtransfer.evil.path", "/workspace/evil.sh", true},
		{"lfs.customtransfer.evil.args", "x", true},
		{"lfs.extension.evil.clean", "sh evil.sh", true},
		{"lfs.storage", "/tmp/x", true},
		{"lfs.concurrenttransfers", "8", false},
		{"remote.origin.lfsurl", "https://lfs.evil.test/", true},
		{"remote.origin.lfspushurl", "https://lfs.evil.test/", true},
		{"status.showuntrackedfiles", "no", true},
		{"http.sslverify", "false", true},
		{"http.https://x.sslverify", "false", true},
		{"http.sslcainfo", "/workspace/ca.pem", true},
		{"http.sslcapath", "/workspace/ca", true},
		{"http.sslcert", "x", true},
		{"http.sslkey", "x", true},
		{"http.postbuffer", "1", false},
	}
	for _, tc := range tests {
		if got := Dangerous(Entry{Key: tc.key, Value: tc.value}); got != tc.want {
			t.Errorf("Dangerous(%s=%s) = %v, want %v", tc.key, tc.value, got, tc.want)
		}
	}
}

func FuzzGitConfig(f *testing.F) {
	for _, tc := range configCases {
		f.Add([]byte(tc.in))
	}
	f.Add([]byte("[a \"\\"))
	f.Add([]byte("[a]b=\"\\"))
	f.Add([]byte("\r\r\n[\r"))
	git := gitReader(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		es, err := ParseConfig(data)
		for _, e := range es {
			_, _, _ = e.Section(), e.Subsection(), e.Name()
			_ = Dangerous(e)
			if e.Key == "" {
				t.Fatalf("ParseConfig(%q) returned an entry with an empty key", data)
			}
		}
		// git is the oracle: what it reads, abox reads, and a file git refuses abox calls broken.
		out, gitErr := git(t, data)
		switch {
		case gitErr != nil && err == nil:
			t.Fatalf("git refuses %q (%v), ParseConfig reads it as %q", data, gitErr, kv(es))
		case gitErr == nil && err != nil:
			t.Fatalf("git reads %q as %q, ParseConfig fails: %v", data, gitList(out), err)
		case gitErr == nil:
			if diff := cmp.Diff(gitList(out), kv(es)); diff != "" {
				t.Fatalf("abox and git disagree on %q (-git +abox):\n%s", data, diff)
			}
		}
	})
}
