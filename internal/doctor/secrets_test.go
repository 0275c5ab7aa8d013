package doctor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/secrets"
)

const secretsManifest = baseManifest + "env_secrets: {DATABASE_URL: db.url}\n" +
	"remote_servers:\n  acme:\n    url: https://acme.example.com/mcp\n    headers: {Authorization: \"Bearer ${ACME}\"}\n" +
	"    secrets: [{name: acme.token, env: ACME}]\n"

func (f *fixture) store(name, value string) {
	f.t.Helper()
	if err := (&secrets.FileStore{Dir: f.paths.SecretsStore()}).Set(context.Background(), name, []byte(value)); err != nil {
		f.t.Fatal(err)
	}
}

func TestSecretsStoreCheck(t *testing.T) {
	f := newFixture(t, baseManifest).daemonUp()
	got := f.run(secretsStore)
	wantStatus(t, "secrets.store", got, OK)
	if got.Data["kind"] != secrets.KindAbox || !strings.Contains(got.Detail, "protected by file permissions only") {
		t.Errorf("finding = %+v", got)
	}
	f.store("a.b", "fake-value")
	if err := os.Chmod(filepath.Join(f.paths.SecretsStore(), "a.b"), 0o644); err != nil {
		t.Fatal(err)
	}
	got = f.run(secretsStore)
	wantStatus(t, "secrets.store with a 0644 file", got, Fail)
	if !strings.Contains(got.Detail, "a.b (0644)") {
		t.Errorf("detail = %q", got.Detail)
	}

	d := newFixture(t, baseManifest)
	d.fake.On("version", docker.Result{Stdout: []byte(`{"Client":{"Version":"28.2.2","ApiVersion":"1.41"},"Server":{"Version":"28.1.1","ApiVersion":"1.41","Platform":{"Name":"Docker Desktop 4.40.0 (187762)"}}}`)}).Optional()
	d.fake.On("mcp secret ls --json", docker.Result{Stdout: []byte("[]")})
	got = d.run(secretsStore)
	wantStatus(t, "secrets.store on Desktop", got, OK)
	if got.Data["kind"] != secrets.KindDesktop {
		t.Errorf("finding = %+v", got)
	}

	wantStatus(t, "secrets.store without a daemon", newFixture(t, baseManifest).daemonDown().run(secretsStore), Skip)
}

func TestSecretsPresent(t *testing.T) {
	f := newFixture(t, secretsManifest).daemonUp()
	got := f.run(secretsPresent)
	wantStatus(t, "secrets.present, nothing stored", got, Fail)
	for _, want := range []string{"acme.token (remote acme)", "db.url (env DATABASE_URL)"} {
		if !strings.Contains(got.Detail, want) {
			t.Errorf("detail %q lacks %q", got.Detail, want)
		}
	}
	if !strings.Contains(got.Hint, "abox secrets set acme.token") {
		t.Errorf("hint = %q", got.Hint)
	}
	f.store("acme.token", "fake-a")
	f.store("db.url", "fake-b")
	wantStatus(t, "secrets.present, all stored", f.run(secretsPresent), OK)
	wantStatus(t, "secrets.present, none required", newFixture(t, baseManifest).daemonUp().run(secretsPresent), OK)
}

func TestSecretsFresh(t *testing.T) {
	f := newFixture(t, secretsManifest).daemonUp()
	mkdir(t, f.paths.Config)
	if err := writeFile(f.paths.SecretsFile(), "mappings:\n  - secret: acme.token\n    env: ACME_TOKEN\n"); err != nil {
		t.Fatal(err)
	}
	f.store("acme.token", "fake-current")
	envValue := "fake-current"
	run := func(quick bool) Finding {
		e := f.env()
		e.Quick = quick
		e.SecretSources = &secrets.Sources{Env: func(k string) (string, bool) { return envValue, k == "ACME_TOKEN" }}
		return secretsFresh(context.Background(), e)
	}
	wantStatus(t, "secrets.fresh --quick", run(true), Skip)
	wantStatus(t, "secrets.fresh in sync", run(false), OK)
	envValue = "fake-rotated"
	got := run(false)
	wantStatus(t, "secrets.fresh after rotation", got, Warn)
	if !strings.Contains(got.Detail, "acme.token drifted") || strings.Contains(got.Detail, "fake-") {
		t.Errorf("detail = %q", got.Detail)
	}
}

func TestAgentEnvSecretsAttached(t *testing.T) {
	wantStatus(t, "none attached", newFixture(t, baseManifest).daemonUp().run(agentEnvSecrets), OK)

	f := newFixture(t, baseManifest+"env_secrets: {DATABASE_URL: db.url}\n").daemonUp()
	got := f.run(agentEnvSecrets)
	wantStatus(t, "attached, not stored", got, Fail)
	if !strings.Contains(got.Hint, "abox secrets set db.url") || !strings.Contains(got.Hint, "abox secrets detach DATABASE_URL") {
		t.Errorf("hint = %q", got.Hint)
	}
	f.store("db.url", "fake-value")
	got = f.run(agentEnvSecrets)
	wantStatus(t, "attached and stored", got, Warn)
	if !strings.Contains(got.Detail, "1 secret: DATABASE_URL←db.url") || !strings.Contains(got.Hint, "allowed domains") ||
		!strings.Contains(got.Hint, "docker inspect") {
		t.Errorf("finding = %q / %q", got.Detail, got.Hint)
	}
}

func TestSecretsStoreRisk(t *testing.T) {
	f := newFixture(t, baseManifest).daemonUp()
	r := f.env().secretsStoreRisk(context.Background())
	if !r.Applies || r.Data["kind"] != secrets.KindAbox || !strings.Contains(r.Detail, "plaintext") || r.Hint == "" {
		t.Errorf("risk = %+v", r)
	}
}

// TestSecretsSources: a file source inside the workspace is as good as attached.
func TestSecretsSources(t *testing.T) {
	f := newFixture(t, baseManifest)
	mkdir(t, f.paths.Config)
	if err := writeFile(f.paths.SecretsFile(), "mappings:\n  - secret: ok.key\n    file: /etc/hostname\n"); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "secrets.sources outside", f.run(secretsSources), OK)
	f.writeWS("tokens/api", "fake")
	if err := writeFile(f.paths.SecretsFile(), "mappings:\n  - secret: ws.key\n    file: "+filepath.Join(f.ws, "tokens", "api")+"\n"); err != nil {
		t.Fatal(err)
	}
	got := f.run(secretsSources)
	wantStatus(t, "secrets.sources in the workspace", got, Warn)
	if !strings.Contains(got.Detail, "ws.key (") || !strings.Contains(got.Detail, "inside "+f.ws) {
		t.Errorf("detail = %q", got.Detail)
	}
}
