package detect

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/egress"
)

// Registry hosts here are placeholders under .test: detect never builds in the public Go proxy,
// checksum database or npm registry, and neither do its tests.

// workspace creates a temporary workspace holding files (name → content).
func workspace(t *testing.T, files map[string]string) string {
	t.Helper()
	ws := t.TempDir()
	for name, content := range files {
		path := filepath.Join(ws, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

// checkEntries fails unless every suggestion is an egress entry in canonical form.
func checkEntries(t *testing.T, entries []string) {
	t.Helper()
	for _, s := range entries {
		e, err := egress.Parse(s)
		if err != nil {
			t.Errorf("suggestion %q is not an egress entry: %v", s, err)
		} else if e.String() != s {
			t.Errorf("suggestion %q is not canonical; want %q", s, e.String())
		}
	}
}

func TestToolchains(t *testing.T) {
	tests := []struct {
		name  string
		files []string
		want  []string
	}{
		{"empty", nil, nil},
		{"go", []string{"go.mod"}, []string{"go"}},
		{"python markers", []string{"pyproject.toml", "requirements.txt", "setup.py", "uv.lock"}, []string{"python"}},
		{"each python marker", []string{"uv.lock"}, []string{"python"}},
		{"java gradle", []string{"build.gradle.kts"}, []string{"java"}},
		{"java maven", []string{"pom.xml"}, []string{"java"}},
		{"in manifest order", []string{"composer.json", "Gemfile", "Cargo.toml", "package.json", "go.mod", "setup.py", "build.gradle"},
			[]string{"python", "go", "node", "rust", "java", "ruby", "php"}},
		{"dotnet solution", []string{"App.sln"}, []string{"dotnet"}},
		{"dotnet projects", []string{"App.csproj", "Lib.fsproj"}, []string{"dotnet"}},
		{"dotnet last", []string{"App.csproj", "package.json"}, []string{"node", "dotnet"}},
		{"not a dotnet project", []string{"csproj", "App.csproj.user.bak"}, nil},
		{"markers below the root do not count", []string{"sub/go.mod", "sub/package.json"}, nil},
		{"case matters", []string{"GO.MOD", "gemfile"}, nil},
		{"other files", []string{"README.md", "Makefile", "go.sum"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{}
			for _, f := range tc.files {
				files[f] = ""
			}
			if diff := cmp.Diff(tc.want, Toolchains(workspace(t, files))); diff != "" {
				t.Errorf("Toolchains() mismatch (-want +got):\n%s", diff)
			}
		})
	}
	if got := Toolchains(filepath.Join(t.TempDir(), "missing")); got != nil {
		t.Errorf("Toolchains(missing) = %q, want nil", got)
	}
	// Glob characters in the workspace path are not patterns.
	ws := filepath.Join(t.TempDir(), "[ws]*")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "go.mod"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"go"}, Toolchains(ws)); diff != "" {
		t.Errorf("Toolchains(%q) mismatch (-want +got):\n%s", ws, diff)
	}
}

func TestEgressFixed(t *testing.T) {
	tests := []struct {
		toolchains []string
		want       []string
	}{
		{nil, nil},
		{[]string{"python"}, []string{"pypi.org", "files.pythonhosted.org"}},
		{[]string{"rust"}, []string{"crates.io", "static.crates.io", "index.crates.io"}},
		{[]string{"java"}, []string{"repo.maven.apache.org", "repo1.maven.org"}},
		{[]string{"ruby"}, []string{"rubygems.org", "index.rubygems.org"}},
		{[]string{"php"}, []string{"repo.packagist.org", "packagist.org"}},
		{[]string{"dotnet"}, []string{"api.nuget.org"}},
		{[]string{"python", "python", "unknown"}, []string{"pypi.org", "files.pythonhosted.org"}},
		// Without host configuration, go and node suggest nothing: no registry is built in.
		{[]string{"go", "node"}, nil},
	}
	for _, tc := range tests {
		got := Egress(tc.toolchains, Registries{})
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Egress(%q) mismatch (-want +got):\n%s", tc.toolchains, diff)
		}
		checkEntries(t, got)
	}
}

func TestEgressGo(t *testing.T) {
	tests := []struct {
		name           string
		goProxy, sumDB string
		want           []string
	}{
		{"proxy then direct", "https://proxy.example.test,direct", "", []string{"proxy.example.test"}},
		{"fallback on any error", "https://a.example.test|https://b.example.test,off", "", []string{"a.example.test", "b.example.test"}},
		{"direct only", "direct", "", nil},
		{"off", "off", "off", nil},
		{"empty", "", "", nil},
		{"spaces and a path", " https://proxy.example.test/go/ , direct ", "", []string{"proxy.example.test"}},
		{"case, trailing dot, default port", "https://Proxy.Example.TEST.:443/", "", []string{"proxy.example.test"}},
		{"other port", "https://proxy.example.test:8443", "", []string{"proxy.example.test:8443"}},
		{"http", "http://proxy.example.test", "", []string{"proxy.example.test:80"}},
		{"http with port", "http://proxy.example.test:3000", "", []string{"proxy.example.test:3000"}},
		{"credentials", "https://user:s3cret@proxy.example.test", "", []string{"proxy.example.test"}},
		{"localhost is left out", "http://localhost:3000,https://proxy.example.test", "", []string{"proxy.example.test"}},
		{"IP addresses are left out", "http://127.0.0.1:3000|https://[::1]:8443|https://10.0.0.1", "", nil},
		{"file URL", "file:///srv/goproxy", "", nil},
		{"no scheme means https", "proxy.example.test,direct", "", []string{"proxy.example.test"}},
		{"no scheme with path and port", "proxy.example.test:8443/go|mirror.example.test/go", "", []string{"proxy.example.test:8443", "mirror.example.test"}},
		{"absolute path is not a host", "/srv/goproxy", "", nil},
		{"single words are keywords", "direct,off,noproxy", "", nil},
		{"bad port", "https://proxy.example.test:99999,https://proxy.example.test:0x1", "", nil},
		{"sumdb name", "", "sum.example.test", []string{"sum.example.test"}},
		{"sumdb name and key", "", "sum.example.test+033de0ae+Ac4zctda0e5eza+HJyk9SxEdh+s3Ux18htTTAD8OuAn8", []string{"sum.example.test"}},
		{"sumdb name, key and URL", "", "sum.example.test+033de0ae+Ac4 https://mirror.example.test/sumdb/sum.example.test", []string{"mirror.example.test"}},
		{"sumdb upper case", "", "SUM.Example.Test", []string{"sum.example.test"}},
		{"sumdb localhost", "", "localhost+key http://localhost:8080", nil},
		{"sumdb off", "", "off", nil},
		{"proxy and sumdb deduplicated", "https://proxy.example.test,direct", "proxy.example.test", []string{"proxy.example.test"}},
		{"hostile", "https://proxy.example.test/$(id),https://a`b`.example.test,https://x.example.test\n", "sum.example.test;id", []string{"proxy.example.test", "x.example.test"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Egress([]string{"go"}, Registries{GoProxy: tc.goProxy, GoSumDB: tc.sumDB})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Egress(go, GOPROXY=%q GOSUMDB=%q) mismatch (-want +got):\n%s", tc.goProxy, tc.sumDB, diff)
			}
			checkEntries(t, got)
			for _, s := range got {
				if strings.Contains(s, "s3cret") {
					t.Errorf("suggestion %q carries the proxy's password", s)
				}
			}
		})
	}
}

func TestEgressNPM(t *testing.T) {
	tests := []struct {
		npm  string
		want []string
	}{
		{"https://registry.example.test/", []string{"registry.example.test"}},
		{"https://npm.example.test/api/npm/npm-remote/", []string{"npm.example.test"}},
		{"http://verdaccio.example.test:4873/", []string{"verdaccio.example.test:4873"}},
		{"http://localhost:4873/", nil},
		{"", nil},
		{"undefined", nil},
		{"registry.example.test", nil},
	}
	for _, tc := range tests {
		got := Egress([]string{"node"}, Registries{NPM: tc.npm})
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Egress(node, npm=%q) mismatch (-want +got):\n%s", tc.npm, diff)
		}
		checkEntries(t, got)
	}
}

// gitConfig returns a .git/config with one remote per URL.
func gitConfig(urls ...string) string {
	var b strings.Builder
	b.WriteString("[core]\n\trepositoryformatversion = 0\n")
	for i, u := range urls {
		b.WriteString("[remote \"r" + string(rune('a'+i)) + "\"]\n\turl = " + u + "\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n")
	}
	return b.String()
}

func TestGitRemotes(t *testing.T) {
	github := []string{"github.com", "api.github.com", "codeload.github.com"}
	githubSSH := []string{"github.com:22", "api.github.com", "codeload.github.com", "github.com"}
	tests := []struct {
		name string
		url  string
		want []string
	}{
		{"github https", "https://github.com/org/repo.git", github},
		{"github scp", "git@github.com:org/repo.git", githubSSH},
		{"github ssh URL", "ssh://git@github.com/org/repo.git", githubSSH},
		{"github upper case", "https://GitHub.COM/org/repo", github},
		{"github trailing dot", "https://github.com./org/repo", github},
		{"github explicit port", "https://github.com:443/org/repo", github},
		{"gitlab https", "https://gitlab.com/org/repo.git", []string{"gitlab.com"}},
		{"other https", "https://git.example.test/org/repo.git", []string{"git.example.test"}},
		{"https other port", "https://git.example.test:8443/org/repo.git", []string{"git.example.test:8443"}},
		{"http", "http://git.example.test/org/repo.git", []string{"git.example.test:80"}},
		{"git protocol", "git://git.example.test/org/repo.git", []string{"git.example.test:9418"}},
		{"git protocol with port", "git://git.example.test:9419/repo", []string{"git.example.test:9419"}},
		{"ssh with port", "ssh://git@git.example.test:2222/org/repo.git", []string{"git.example.test:2222"}},
		{"ssh without user", "ssh://git.example.test/repo", []string{"git.example.test:22"}},
		{"git+ssh", "git+ssh://git@git.example.test/repo", []string{"git.example.test:22"}},
		{"ssh+git", "ssh+git://git@git.example.test/repo", []string{"git.example.test:22"}},
		{"scp without user", "git.example.test:org/repo.git", []string{"git.example.test:22"}},
		{"scp upper case", "git@GIT.Example.TEST:org/repo.git", []string{"git.example.test:22"}},
		{"credentials", "https://user:ghp_s3cretToken@git.example.test/org/repo.git", []string{"git.example.test"}},
		{"token user", "https://ghp_s3cretToken@github.com/org/repo.git", github},
		{"quoted", `"https://git.example.test/org/repo.git"`, []string{"git.example.test"}},
		{"scp with @ in the path", "git@git.example.test:org/repo@v2.git", []string{"git.example.test:22"}},
		{"scp with colons in the path", "git@git.example.test:org/a:b.git", []string{"git.example.test:22"}},
		{"scp with @ in the user", "first.last@corp@git.example.test:org/repo.git", []string{"git.example.test:22"}},
		{"scp without host", "git@:org/repo.git", nil},
		{"inline comment", "https://git.example.test/org/repo.git # the mirror", []string{"git.example.test"}},
		{"inline semicolon comment", "git@git.example.test:org/repo.git ; old", []string{"git.example.test:22"}},
		{"quoted part", `"https://git.example.test/a b#c"`, []string{"git.example.test"}},
		{"escaped backslash", `https://git.example.test/a\\b`, []string{"git.example.test"}},
		{"unknown escape", `https://git.example.test/\x`, nil},
		{"trailing backslash", `https://git.example.test/x\`, nil},
		{"quoted hash", `https://"git.example.test"/x"#frag"`, []string{"git.example.test"}},
		{"escaped quote", `https://git.example.test/"x`, []string{"git.example.test"}},
		{"local absolute path", "/srv/git/repo.git", nil},
		{"local relative path", "../repo", nil},
		{"local dot path", "./repo:odd", nil},
		{"file URL", "file:///srv/git/repo.git", nil},
		{"unknown scheme", "ftp://git.example.test/repo", nil},
		{"single label", "https://gitserver/org/repo", nil},
		{"single label scp", "git@gitserver:org/repo", nil},
		{"localhost", "ssh://git@localhost:2222/repo", nil},
		{"IP address", "https://192.168.1.10/org/repo", nil},
		{"IPv6", "ssh://git@[::1]:22/repo", nil},
		{"bad port", "ssh://git@git.example.test:ssh/repo", nil},
		{"empty", "", nil},
		{"scheme only", "https://", nil},
		{"garbage", "://", nil},
		{"shell", "$(curl evil.example.test)", nil},
		{"backslash host", `git@git\example.test:repo`, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ws := workspace(t, map[string]string{".git/config": gitConfig(tc.url)})
			got := GitRemotes(ws)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("GitRemotes(url = %s) mismatch (-want +got):\n%s", tc.url, diff)
			}
			checkEntries(t, got)
			for _, s := range got {
				if strings.Contains(s, "s3cret") || strings.Contains(s, "@") {
					t.Errorf("entry %q carries the remote's credentials", s)
				}
			}
		})
	}
}

func TestGitRemotesConfigSyntax(t *testing.T) {
	const config = `# url = https://commented.example.test/x
; url = https://commented2.example.test/x
[core]
	url = https://core.example.test/x
[Remote "Origin"]
	URL=https://a.example.test/x.git
[REMOTE "up"]
  	  url   =   git@b.example.test:org/x.git
	pushurl = https://push.example.test/x.git
[remote "dup"]
	url = https://a.example.test/other.git
[remotes]
	url = https://remotes.example.test/x
[remote]
	url = https://bare-remote.example.test/x
[submodule "lib"]
	url = https://submodule.example.test/lib.git
[remote "garbage"]
	url
	= https://nokey.example.test/x
	url =
	[broken
	url = https://after-broken.example.test/x
`
	ws := workspace(t, map[string]string{".git/config": config})
	want := []string{"a.example.test", "b.example.test:22"}
	if diff := cmp.Diff(want, GitRemotes(ws)); diff != "" {
		t.Errorf("GitRemotes() mismatch (-want +got):\n%s", diff)
	}
}

// TestGitRemotesHostileConfig: a FIFO or a link out in .git/config's place yields nothing, at
// once.
func TestGitRemotesHostileConfig(t *testing.T) {
	ws := workspace(t, map[string]string{".git/hooks/.keep": ""})
	cfg := filepath.Join(ws, ".git", "config")
	if err := syscall.Mkfifo(cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan []string, 1)
	go func() { done <- GitRemotes(ws) }()
	select {
	case got := <-done:
		if got != nil {
			t.Errorf("GitRemotes(fifo) = %q, want nil", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("GitRemotes blocked on a FIFO .git/config")
	}
	os.Remove(cfg)
	outside := filepath.Join(t.TempDir(), "config")
	os.WriteFile(outside, []byte("[remote \"o\"]\n\turl = https://elsewhere.example/x\n"), 0o644)
	os.Symlink(outside, cfg)
	if got := GitRemotes(ws); got != nil {
		t.Errorf("GitRemotes(link out) = %q, want nil", got)
	}
}

func TestGitRemotesMissing(t *testing.T) {
	if got := GitRemotes(t.TempDir()); got != nil {
		t.Errorf("GitRemotes(no .git) = %q, want nil", got)
	}
	// A worktree or submodule has a .git file, not a directory.
	ws := workspace(t, map[string]string{".git": "gitdir: /elsewhere/.git/worktrees/x\n"})
	if got := GitRemotes(ws); got != nil {
		t.Errorf("GitRemotes(.git file) = %q, want nil", got)
	}
}

type registryProbe struct {
	npm    string
	goEnv  []string
	absent bool
}

func (p registryProbe) NPMRegistry(context.Context) (string, error) {
	if p.absent {
		return "", errors.New("npm: not found")
	}
	return p.npm, nil
}

func (p registryProbe) GoEnv(_ context.Context, names ...string) ([]string, error) {
	if p.absent {
		return nil, errors.New("go: not found")
	}
	return p.goEnv, nil
}

func TestHostRegistries(t *testing.T) {
	got := HostRegistries(context.Background(), registryProbe{npm: "https://npm.mirror.example/", goEnv: []string{"https://proxy.mirror.example,direct", "off"}})
	want := Registries{GoProxy: "https://proxy.mirror.example,direct", GoSumDB: "off", NPM: "https://npm.mirror.example/"}
	if got != want {
		t.Errorf("HostRegistries = %+v, want %+v", got, want)
	}
	if got := HostRegistries(context.Background(), registryProbe{absent: true}); got != (Registries{}) {
		t.Errorf("HostRegistries(no tools) = %+v, want none", got)
	}
	if got := HostRegistries(context.Background(), registryProbe{goEnv: []string{"only one"}}); got.GoProxy != "" {
		t.Errorf("HostRegistries(short go env) = %+v, want no GOPROXY", got)
	}
	s := SuggestEgress([]string{"go", "node"}, want)
	if !slices.Contains(s["go"], "proxy.mirror.example") || !slices.Contains(s["node"], "npm.mirror.example") || slices.Contains(s["go"], "npm.mirror.example") {
		t.Errorf("SuggestEgress = %v, want each toolchain's own mirror", s)
	}
}
