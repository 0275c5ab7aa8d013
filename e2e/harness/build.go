//go:build e2e

package harness

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"go/build"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aboxhq/abox/e2e/testca"
)

const modulePath = "github.com/aboxhq/abox"

// repoRoot finds the module root by walking up from the working directory.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(data), "module "+modulePath+"\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the abox module")
		}
		dir = parent
	}
}

// cacheDir is where built binaries, the test CA and setup.sh's work files live.
func cacheDir(root string) string {
	if d := os.Getenv("ABOX_E2E_CACHE"); d != "" {
		return d
	}
	return filepath.Join(root, "e2e", ".cache")
}

// dirs are the repository root and the cache directory.
type dirs struct{ root, cache string }

var findDirs = sync.OnceValues(func() (dirs, error) {
	root, err := repoRoot()
	if err != nil {
		return dirs{}, err
	}
	d := dirs{root: root, cache: cacheDir(root)}
	return d, os.MkdirAll(d.cache, 0o755)
})

// must fails the test on err; the builds below are memoised with their errors, so every test
// that needs a broken one fails with the same message.
func must[T any](t testing.TB, f func() (T, error)) T {
	t.Helper()
	v, err := f()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// goBinary finds the go command: on PATH, else in the GOROOT this test was built with.
func goBinary() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(build.Default.GOROOT, "bin", "go")
}

// goBuild builds pkg (relative to the repo root) as a static linux binary into the cache and
// returns its path. Builds go to a temporary name first: concurrent test binaries share the
// cache.
func goBuild(ctx context.Context, pkg, name string, tags ...string) (string, error) {
	d, err := findDirs()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(d.cache, "bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, "."+name+"-")
	if err != nil {
		return "", err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	args := []string{"build", "-trimpath", "-ldflags=-s -w", "-o", tmp.Name()}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	start := time.Now()
	res, err := command{name: goBinary(), args: append(args, "./"+pkg), dir: d.root,
		env: append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")}.run(ctx)
	if err != nil || !res.OK() {
		return "", fmt.Errorf("go build ./%s: %v\n%s", pkg, err, res.Stderr)
	}
	out := filepath.Join(dir, name)
	if err := os.Chmod(tmp.Name(), 0o755); err != nil {
		return "", err
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return "", err
	}
	logf("built %s in %.1fs", name, time.Since(start).Seconds())
	return out, nil
}

// logf reports build progress on stdout, where `go test -v` and CI logs show it.
func logf(format string, args ...any) {
	fmt.Printf("harness: "+format+"\n", args...)
}

var (
	buildStandin = sync.OnceValues(func() (string, error) { return goBuildTimeout("e2e/standin", "claude", "e2e") })
	buildTestsrv = sync.OnceValues(func() (string, error) { return scratchImage("testsrv") })
	buildMCPStub = sync.OnceValues(func() (string, error) { return scratchImage("mcpstub") })
	buildClient  = sync.OnceValues(clientImage)
	buildAbox    = sync.OnceValues(func() (string, error) { return goBuildTimeout("cmd/abox", "abox") })
	loadCA       = sync.OnceValues(func() (*testca.CA, error) {
		d, err := findDirs()
		if err != nil {
			return nil, err
		}
		return testca.LoadOrCreate(caDir(d))
	})
	baseImageID = sync.OnceValues(func() (string, error) {
		return dockerOut(context.Background(), "image", "inspect", "--format", "{{.Id}}", BaseImage())
	})
)

func goBuildTimeout(pkg, name string, tags ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return goBuild(ctx, pkg, name, tags...)
}

// StandinBinary returns the host path of the stand-in claude (static, linux).
func StandinBinary(t testing.TB) string { return must(t, buildStandin) }

// TestsrvImage returns the testsrv image, abox-e2e-testsrv:<hash>.
func TestsrvImage(t testing.TB) string { return must(t, buildTestsrv) }

// MCPStubImage returns the mcpstub image, abox-e2e-mcpstub:<hash>. Its entrypoint takes the
// gateway's flags directly, like docker/mcp-gateway's image.
func MCPStubImage(t testing.TB) string { return must(t, buildMCPStub) }

// buildMCPStubOpen builds the open stub: the same stub, with the environment that switches its
// bearer check off in a container, as docker/mcp-gateway before v0.43.1 did.
var buildMCPStubOpen = sync.OnceValues(func() (string, error) {
	stub, err := buildMCPStub()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return buildImage(ctx, "abox-e2e-mcpstub-open", "FROM "+stub+"\nENV MCPSTUB_CONTAINER_AUTH=off\n", nil)
})

// MCPStubOpenImage returns a deliberately vulnerable build of the mcpstub gateway,
// abox-e2e-mcpstub-open:<hash>: run as abox runs a gateway (DOCKER_MCP_IN_CONTAINER=1), it
// serves MCP without a token and with a wrong one, as docker/mcp-gateway did before v0.43.1.
func MCPStubOpenImage(t testing.TB) string { return must(t, buildMCPStubOpen) }

// buildMCPStubSpawn builds the stub gateway that spawns its catalog's servers with the docker
// CLI, as docker/mcp-gateway's image (alpine with docker-cli) does: the base image, the stub,
// and the host's own docker client, copied in at test time and never kept in the repository.
var buildMCPStubSpawn = sync.OnceValues(func() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cli, err := exec.LookPath("docker")
	if err != nil {
		return "", fmt.Errorf("the spawning mcpstub image needs the host's docker CLI: %w", err)
	}
	if cli, err = filepath.EvalSymlinks(cli); err != nil {
		return "", err
	}
	bin, err := goBuild(ctx, "e2e/mcpstub", "mcpstub", "e2e")
	if err != nil {
		return "", err
	}
	base, err := baseImageID()
	if err != nil {
		return "", err
	}
	// HOME and DOCKER_MCP_IN_CONTAINER as in docker/mcp-gateway's image.
	dockerfile := "FROM " + base + "\nENV HOME=/root DOCKER_MCP_IN_CONTAINER=1\n" +
		"COPY docker /usr/local/bin/docker\nCOPY mcpstub /mcpstub\nENTRYPOINT [\"/mcpstub\"]\n"
	tag, err := buildImage(ctx, "abox-e2e-mcpstub-spawn", dockerfile, map[string]string{"docker": cli, "mcpstub": bin})
	if err != nil {
		return "", err
	}
	// A static docker CLI runs anywhere; a distribution's dynamic one needs its libraries in the
	// Debian base.
	if out, err := dockerOut(ctx, "run", "--rm", "--entrypoint", "docker", tag, "--version"); err != nil {
		return "", fmt.Errorf("the host's docker CLI %s does not run in %s: %w\n%s", cli, BaseImage(), err, out)
	}
	return tag, nil
})

// MCPStubSpawnImage returns the mcpstub gateway with a docker CLI, abox-e2e-mcpstub-spawn:<hash>:
// run with the daemon's socket mounted, it spawns the catalog servers --servers names as
// containers, as docker/mcp-gateway does (see [GatewayOptions.Spawn]).
func MCPStubSpawnImage(t testing.TB) string { return must(t, buildMCPStubSpawn) }

// MCPStubSpawnImageWith returns [MCPStubSpawnImage] with env (NAME=value) set in the image, for
// a gateway abox starts (which passes the gateway no environment of a test's choosing), tagged
// abox-e2e-mcpstub-spawn-env:<hash>.
func MCPStubSpawnImageWith(t testing.TB, env ...string) string {
	t.Helper()
	base := MCPStubSpawnImage(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	tag, err := buildImage(ctx, "abox-e2e-mcpstub-spawn-env", "FROM "+base+"\nENV "+strings.Join(env, " ")+"\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	return tag
}

// scratchImage builds e2e/<name> into a FROM scratch image tagged by content.
func scratchImage(name string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin, err := goBuild(ctx, "e2e/"+name, name, "e2e")
	if err != nil {
		return "", err
	}
	// HOME as in docker/mcp-gateway's image: the gateway finds catalogs under it.
	dockerfile := fmt.Sprintf("FROM scratch\nENV HOME=/root\nCOPY %s /%s\nENTRYPOINT [\"/%s\"]\n", name, name, name)
	return buildImage(ctx, "abox-e2e-"+name, dockerfile, map[string]string{name: bin})
}

// buildImage builds dockerfile with files (name in context → host path) and tags it
// <repo>:<hash of everything>; an existing tag is reused. It returns the tag.
func buildImage(ctx context.Context, repo, dockerfile string, files map[string]string) (string, error) {
	h := sha256.New()
	io.WriteString(h, dockerfile)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		data, err := os.ReadFile(files[n])
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "\x00%s\x00%d\x00", n, len(data))
		h.Write(data)
	}
	tag := repo + ":" + hex.EncodeToString(h.Sum(nil))[:12]
	if _, err := dockerOut(ctx, "image", "inspect", "--format", "{{.Id}}", tag); err == nil {
		return tag, nil
	}
	dir, err := os.MkdirTemp("", "abox-e2e-build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(dockerfile), 0o644); err != nil {
		return "", err
	}
	for _, n := range names {
		if err := copyFile(files[n], filepath.Join(dir, n)); err != nil {
			return "", err
		}
	}
	start := time.Now()
	if out, err := dockerOut(ctx, "build", "-q", "-t", tag, dir); err != nil {
		return "", fmt.Errorf("building %s: %w\n%s", tag, err, out)
	}
	logf("built image %s in %.1fs", tag, time.Since(start).Seconds())
	pruneImages(ctx, repo, tag)
	return tag, nil
}

// pruneImages removes the other tags of repo, older builds of the same thing, once they are an
// hour old; a recent one may belong to a test binary of another checkout that is running now.
// Images still used by a container are refused by docker and stay.
func pruneImages(ctx context.Context, repo, keep string) {
	out, err := dockerOut(ctx, "image", "ls", repo, "--format", "{{.Repository}}:{{.Tag}}")
	if err != nil {
		return
	}
	for _, ref := range lines(out) {
		if ref == keep {
			continue
		}
		created, err := dockerOut(ctx, "image", "inspect", "--format", "{{.Created}}", ref)
		if c, perr := time.Parse(time.RFC3339Nano, created); err == nil && perr == nil && time.Since(c) > time.Hour {
			_, _ = docker(ctx, "image", "rm", ref)
		}
	}
}

func copyFile(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, fi.Mode().Perm()|0o444)
}

// BaseImage returns the offline Debian base image made by setup.sh: $ABOX_E2E_BASE, else
// abox-e2e-base:bookworm.
func BaseImage() string {
	if b := os.Getenv("ABOX_E2E_BASE"); b != "" {
		return b
	}
	return "abox-e2e-base:bookworm"
}

// BaseImageID returns the local id (sha256:…) of [BaseImage], the form abox's config accepts
// for an image that is in no registry.
func BaseImageID(t testing.TB) string { return must(t, baseImageID) }

// ImageID returns the local id of an image reference.
func ImageID(t testing.TB, ref string) string {
	t.Helper()
	id, err := dockerOut(context.Background(), "image", "inspect", "--format", "{{.Id}}", ref)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// HostCACertificates returns the extra CA certificates this machine trusts (TLS interception);
// images that download over HTTPS need them.
func HostCACertificates() []string {
	certs, _ := filepath.Glob("/usr/local/share/ca-certificates/*.crt")
	return certs
}

// CA returns the test CA, kept in the cache directory so that images trusting it stay cached.
// Only the test images trust it.
func CA(t testing.TB) *testca.CA { return must(t, loadCA) }

// CADir is the directory holding the test CA's ca.crt and ca.key; testsrv mounts it.
func CADir(t testing.TB) string { return caDir(must(t, findDirs)) }

func caDir(d dirs) string { return filepath.Join(d.cache, "ca") }

// ClientImage returns an image for throwaway clients: the base image with curl, dig, nc, ip and
// openssl, trusting the host's extra CAs and the test CA, with a user "agent" (uid 1000).
func ClientImage(t testing.TB) string { return must(t, buildClient) }

func clientImage() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	d, err := findDirs()
	if err != nil {
		return "", err
	}
	if _, err := loadCA(); err != nil {
		return "", err
	}
	base, err := baseImageID()
	if err != nil {
		return "", err
	}
	files := map[string]string{"ca/abox-e2e-test-ca.crt": filepath.Join(caDir(d), testca.CertFile)}
	for _, c := range HostCACertificates() {
		files["ca/"+filepath.Base(c)] = c
	}
	// The package layer comes first so that a new CA only rebuilds the last two.
	dockerfile := "FROM " + base + "\n" +
		"RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends curl ca-certificates " +
		"dnsutils netcat-openbsd iproute2 openssl >/dev/null && rm -rf /var/lib/apt/lists/* && " +
		"useradd -m -u 1000 -s /bin/bash agent\n" +
		"COPY ca/ /usr/local/share/ca-certificates/\n" +
		"RUN update-ca-certificates >/dev/null 2>&1\n"
	return buildImage(ctx, "abox-e2e-client", dockerfile, files)
}

// AboxBinary returns the abox binary: $ABOX_E2E_ABOX if set, else one built from ./cmd/abox.
// A missing or unbuildable CLI fails the test: it once skipped every test that needed abox
// while cmd/abox did not exist, and a skip that quiet would now hide the loss of the suite.
func AboxBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("ABOX_E2E_ABOX"); p != "" {
		return p
	}
	d := must(t, findDirs)
	if mains, _ := filepath.Glob(filepath.Join(d.root, "cmd", "abox", "*.go")); len(mains) == 0 {
		t.Fatalf("cmd/abox has no Go files in %s\n  ↳ restore cmd/abox/main.go, or set ABOX_E2E_ABOX to a built abox", d.root)
	}
	return must(t, buildAbox)
}
