package secrets

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/docker/dockertest"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/paths"
)

// testHost is a host on plain Docker Engine (the abox store) with its layout under a temporary
// directory, and the fake docker it asks.
func testHost(t *testing.T) (*Host, *dockertest.Fake) {
	t.Helper()
	root := t.TempDir()
	fake := dockertest.New(t)
	fake.On("version --format {{json .}}", docker.Result{Stdout: []byte(`{"Client":{"Version":"28"},"Server":{"Version":"28.1.1","Platform":{"Name":""}}}`)}).Optional()
	home := filepath.Join(root, "mcp")
	writeFile(t, filepath.Join(home, "catalogs", "docker-mcp.yaml"), testCatalog, 0o600)
	return &Host{
		Docker:  docker.NewClient(fake, nil),
		Paths:   paths.Paths{Config: filepath.Join(root, "config"), State: filepath.Join(root, "state")},
		MCPHome: home,
		Env:     func(string) (string, bool) { return "", false },
		Home:    root,
		Now:     func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) },
	}, fake
}

// TestHostSetAndRemove: set stores a value from stdin, read before the store is opened, and
// reports unchanged for the same value; the value is in no argv, no message and no report. rm
// removes it and says when the store did not hold it.
func TestHostSetAndRemove(t *testing.T) {
	ctx := context.Background()
	h, fake := testHost(t)
	const value = "fake-value-3b9c"
	res, err := h.Set(ctx, "demo.token", Given{Stdin: strings.NewReader(value + "\n")}, false)
	if err != nil || res.Status != Created || res.Store != KindAbox || res.Next {
		t.Fatalf("Set = %+v, %v; want created in the abox store, no next step", res, err)
	}
	if got, err := os.ReadFile(filepath.Join(h.Paths.SecretsStore(), "demo.token")); err != nil || string(got) != value {
		t.Errorf("the store holds %q, %v; want the value", got, err)
	}
	if res, err = h.Set(ctx, "demo.token", Given{Stdin: strings.NewReader(value)}, false); err != nil || res.Status != Unchanged {
		t.Errorf("Set again = %+v, %v; want unchanged", res, err)
	}
	var out, errOut bytes.Buffer
	res.WriteText(&out, &errOut)
	if out.String() != "unchanged demo.token in the abox store\n" || errOut.Len() != 0 {
		t.Errorf("WriteText = %q, %q", out.String(), errOut.String())
	}
	if strings.Contains(fake.ArgvText(), value) || strings.Contains(out.String(), value) {
		t.Errorf("the value reached an argv or the output: %s", fake.ArgvText())
	}

	rep, err := h.Remove(ctx, []string{"demo.token", "other.token"}, false)
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	rep.WriteText(&out)
	want := "removed demo.token from the abox store\nother.token was not in the abox store; its record is gone\n"
	if out.String() != want {
		t.Errorf("Remove wrote %q, want %q", out.String(), want)
	}
	if _, err := os.Stat(filepath.Join(h.Paths.SecretsStore(), "demo.token")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("demo.token is still in the store: %v", err)
	}
}

// TestHostSetRefusals: a bad name is refused before any source is read, a source that cannot
// be read is a ReadError naming the file, and nothing is stored then.
func TestHostSetRefusals(t *testing.T) {
	ctx := context.Background()
	h, _ := testHost(t)
	read := false
	h.Prompt = func(string) ([]byte, error) { read = true; return []byte("v"), nil }
	var ne *NameError
	if _, err := h.Set(ctx, "../evil", Given{}, false); !errors.As(err, &ne) || err.Error() != `"../evil" is not a valid secret name` || read {
		t.Errorf("Set ../evil = %v (prompted: %v); want a NameError before the prompt", err, read)
	}
	loose := filepath.Join(t.TempDir(), "loose.txt")
	writeFile(t, loose, "fake-loose\n", 0o644)
	var re *ReadError
	_, err := h.Set(ctx, "file.token", Given{File: loose}, false)
	if !errors.As(err, &re) || re.File != loose || re.Name != "file.token" || !errors.Is(err, ErrLoosePerms) {
		t.Errorf("Set from a loose file = %v; want a ReadError of %s wrapping ErrLoosePerms", err, loose)
	}
	h.Prompt = nil
	if _, err := h.Set(ctx, "prompt.token", Given{}, false); !errors.As(err, &re) || !errors.Is(err, ErrNoTerminal) {
		t.Errorf("Set without a terminal = %v; want ErrNoTerminal", err)
	}
	if _, err := os.Stat(h.Paths.SecretsStore()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused set created the store: %v", err)
	}
}

// TestHostOpenErrors: no daemon is a DetectError; a corrupt salt or secrets.json an OpenError
// naming it, Salt telling them apart.
func TestHostOpenErrors(t *testing.T) {
	ctx := context.Background()
	h, _ := testHost(t)
	fake := dockertest.New(t)
	fake.On("version", docker.Result{ExitCode: 1, Stdout: []byte(`{"Server":null}`), Stderr: []byte("Cannot connect to the Docker daemon")})
	h.Docker = docker.NewClient(fake, nil)
	var de *DetectError
	if _, _, _, err := h.Open(ctx, false, false); !errors.As(err, &de) || !errors.Is(err, ErrNoDaemon) {
		t.Errorf("Open without a daemon = %v; want a DetectError wrapping ErrNoDaemon", err)
	}
	h, _ = testHost(t)
	writeFile(t, h.Paths.SecretsState(), "{not json", 0o600)
	var oe *OpenError
	if _, _, _, err := h.Open(ctx, false, false); !errors.As(err, &oe) || oe.Salt || oe.File != h.Paths.SecretsState() {
		t.Errorf("Open with a corrupt secrets.json = %v (%+v)", err, oe)
	}
	h, _ = testHost(t)
	writeFile(t, h.Paths.SecretsSalt(), "short", 0o600)
	if _, _, _, err := h.Open(ctx, false, false); !errors.As(err, &oe) || !oe.Salt || oe.File != h.Paths.SecretsSalt() {
		t.Errorf("Open with a bad salt = %v (%+v)", err, oe)
	}
}

// TestHostSyncAndCheck: sync stores what an env source holds and check then finds it synced; a
// --only secrets.yaml does not map is an UnmappedError; nothing mapped is an empty report.
func TestHostSyncAndCheck(t *testing.T) {
	ctx := context.Background()
	h, _ := testHost(t)
	rep, err := h.Sync(ctx, nil, false, false, false)
	var out, errOut bytes.Buffer
	if err != nil || rep.Verdict() != nil {
		t.Fatalf("Sync with no secrets.yaml = %+v, %v", rep, err)
	}
	rep.WriteText(&out, &errOut)
	if out.String() != h.Paths.SecretsFile()+" maps no secret; nothing to sync\n" {
		t.Errorf("empty sync wrote %q", out.String())
	}
	writeFile(t, h.Paths.SecretsFile(), "mappings:\n  - secret: demo.token\n    env: DEMO\n  - secret: gone.token\n    env: GONE\n", 0o600)
	h.Env = func(k string) (string, bool) { return "fake-env-1", k == "DEMO" }
	var ue *UnmappedError
	if _, err := h.Sync(ctx, []string{"nope"}, false, false, false); !errors.As(err, &ue) || ue.Name != "nope" {
		t.Errorf("Sync --only nope = %v; want an UnmappedError", err)
	}
	rep, err = h.Sync(ctx, nil, false, false, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{rep.Rows[0].Status, rep.Rows[1].Status}; !cmp.Equal(got, []string{Created, Unreadable}) {
		t.Errorf("sync rows = %v", rep.Rows)
	}
	var ae *AttentionError
	if err := rep.Verdict(); !errors.As(err, &ae) || err.Error() != "1 of 2 secrets need attention: gone.token (unreadable)" || ae.Verb != "sync" {
		t.Errorf("sync verdict = %v", err)
	}
	asked := false
	rep, err = h.Check(ctx, func() ([]Need, error) { asked = true; return []Need{{"req.token", UseEnv, "REQ"}}, nil })
	if err != nil || !asked {
		t.Fatalf("Check = %v (required asked: %v)", err, asked)
	}
	var got []string
	for _, r := range rep.Rows {
		got = append(got, r.Secret+" "+r.Status)
	}
	if want := []string{"demo.token synced", "gone.token missing-in-store", "req.token unmapped"}; !cmp.Equal(got, want) {
		t.Errorf("check rows = %v, want %v", got, want)
	}
	if err := rep.Verdict(); !errors.As(err, &ae) || ae.Fix.Secret != "req.token" || ae.Verb != "check" {
		t.Errorf("check verdict = %v (%+v); want req.token to fix", err, ae)
	}
	boom := errors.New("boom")
	if _, err := h.Check(ctx, func() ([]Need, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Errorf("Check with a failing required = %v", err)
	}
}

// TestVerdict: the error counts the failed rows and names the last one a single command fixes;
// an unfixable failure after it does not hide it.
func TestVerdict(t *testing.T) {
	ok := &RowsReport{Verb: "sync", Rows: []Row{{Secret: "a", Status: Created}, {Secret: "b", Status: External}}}
	if err := ok.Verdict(); err != nil {
		t.Errorf("Verdict of good rows = %v", err)
	}
	bad := &RowsReport{Verb: "check", Rows: []Row{{Secret: "a", Status: Synced}, {Secret: "b", Status: Drifted},
		{Secret: "c", Status: MissingInStore}, {Secret: "d", Status: Unreadable}}}
	var ae *AttentionError
	err := bad.Verdict()
	if !errors.As(err, &ae) || err.Error() != "3 of 4 secrets need attention: b (drifted), c (missing-in-store), d (unreadable)" {
		t.Fatalf("Verdict = %v", err)
	}
	if ae.Fix.Secret != "c" || ae.Fix.Status != MissingInStore || ae.Verb != "check" {
		t.Errorf("Fix = %+v, want c missing-in-store", ae.Fix)
	}
	unfixable := &RowsReport{Rows: []Row{{Secret: "d", Status: Failed}}}
	if err := unfixable.Verdict(); !errors.As(err, &ae) || ae.Fix != (Row{}) {
		t.Errorf("Verdict of a failure = %v (%+v); want no fix", err, ae)
	}
}

// TestInUse: every use of every name, a stale project's marked; none is nil.
func TestInUse(t *testing.T) {
	x := &Index{Uses: []Use{
		{Need: Need{"demo.shared", UseEnv, "DATABASE_URL"}, Project: "alpha"},
		{Need: Need{"demo.shared", UseServer, "github"}, Project: "gamma", Stale: true},
		{Need: Need{"other", UseEnv, "X"}, Project: "beta"},
	}}
	var iu *InUseError
	err := inUse(x, []string{"demo.shared", "free"})
	want := "refusing to remove a secret in use:\ndemo.shared is used by alpha → env DATABASE_URL, gamma → server github (stale project)"
	if !errors.As(err, &iu) || err.Error() != want {
		t.Errorf("inUse = %v, want %q", err, want)
	}
	if err := inUse(x, []string{"free"}); err != nil {
		t.Errorf("inUse of an unused secret = %v", err)
	}
}

// TestAttachDetach: attach edits through the caller's editor and says whether the store holds
// each secret; detach warns of what is not attached and edits nothing when none is.
func TestAttachDetach(t *testing.T) {
	ctx := context.Background()
	h, _ := testHost(t)
	if err := (&FileStore{Dir: h.Paths.SecretsStore()}).Set(ctx, "db.url", []byte("v")); err != nil {
		t.Fatal(err)
	}
	doc := func(yaml string) *manifest.Doc {
		d, err := manifest.ParseDoc([]byte(yaml), "agentbox.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	edits := 0
	var d *manifest.Doc
	edit := func(e func(*manifest.Doc) error) (*manifest.Manifest, error) {
		edits++
		if err := e(d); err != nil {
			return nil, err
		}
		return d.Manifest("agentbox.yaml")
	}
	d = doc("project: p\nprofile: default\n")
	rep, err := h.Attach(ctx, []manifest.EnvSecret{{Env: "DB", Secret: "db.url"}, {Env: "TOK", Secret: "new.token"}}, edit)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"attached DB ← db.url (in the store)", "attached TOK ← new.token (not in the store yet: `abox secrets set new.token`)"}
	if !cmp.Equal(rep.Lines, want) || !cmp.Equal(rep.Attached, map[string]string{"DB": "db.url", "TOK": "new.token"}) {
		t.Errorf("Attach = %q %v", rep.Lines, rep.Attached)
	}
	m, _ := d.Manifest("agentbox.yaml")
	var warned []string
	h.Warn = func(_, format string, args ...any) { warned = append(warned, format) }
	rep, err = h.Detach(m, []string{"DB", "NOPE"}, edit)
	if err != nil || !cmp.Equal(rep.Lines, []string{"detached DB (was ← db.url); the next run starts the agent without it"}) ||
		!cmp.Equal(rep.Attached, map[string]string{"TOK": "new.token"}) || len(warned) != 1 {
		t.Errorf("Detach = %+v, %v; warned %q", rep, err, warned)
	}
	before := edits
	if rep, err := h.Detach(m, []string{"NOPE"}, edit); rep != nil || err != nil || edits != before {
		t.Errorf("Detach of nothing attached = %+v, %v, %d edits", rep, err, edits-before)
	}
}

// TestAgentEnv: a missing attached secret is an AttachedError naming it; nothing attached asks
// no daemon.
func TestAgentEnv(t *testing.T) {
	ctx := context.Background()
	h, fake := testHost(t)
	if data, err := h.AgentEnv(ctx, nil); data != nil || err != nil || len(fake.Calls()) != 0 {
		t.Errorf("AgentEnv of nothing = %q, %v, %d calls", data, err, len(fake.Calls()))
	}
	var ae *AttachedError
	_, err := h.AgentEnv(ctx, map[string]string{"API_KEY": "demo.key"})
	if !errors.As(err, &ae) || ae.Missing.Needs[0].Secret != "demo.key" || !strings.HasPrefix(err.Error(), "attached secrets are not in the secrets store: demo.key") {
		t.Errorf("AgentEnv of a missing secret = %v", err)
	}
}
