package secrets

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestTerminalPrompt: the label goes to the error stream, the value comes back and is written
// nowhere; a failed read says so without a value.
func TestTerminalPrompt(t *testing.T) {
	var w bytes.Buffer
	gotFd := -1
	prompt := TerminalPrompt(7, &w, func(fd int) ([]byte, error) { gotFd = fd; return []byte("fake-typed-42"), nil })
	v, err := prompt("value of demo.token")
	if err != nil || string(v) != "fake-typed-42" || gotFd != 7 {
		t.Fatalf("prompt = %q, %v (fd %d)", v, err, gotFd)
	}
	if w.String() != "value of demo.token (typing is hidden): \n" {
		t.Errorf("the prompt wrote %q", w.String())
	}
	boom := errors.New("boom")
	prompt = TerminalPrompt(7, &w, func(int) ([]byte, error) { return nil, boom })
	if _, err := prompt("x"); !errors.Is(err, boom) || err.Error() != "reading the prompt: boom" {
		t.Errorf("a failed read = %v", err)
	}
}

// TestRowsText: a table on out, cells escaped so that a detail cannot forge a row; the store
// and the next step on the error stream.
func TestRowsText(t *testing.T) {
	rep := &RowsReport{Rows: []Row{{Secret: "a.token", Status: Created, Source: "env"},
		{Secret: "b.token", Status: Unreadable, Detail: "bad\nforged  row"}}, Store: KindAbox, Why: "Docker Engine 28", Next: true}
	var out, errOut bytes.Buffer
	rep.WriteText(&out, &errOut)
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "secret ") || !strings.HasPrefix(lines[1], "a.token  created     env     -") ||
		!strings.Contains(lines[2], "b.token  unreadable  -") {
		t.Errorf("table = %q", out.String())
	}
	want := "store: abox (Docker Engine 28)\nnext: `abox gateway up` (or `abox up`) hands the new values to the gateway\n"
	if errOut.String() != want {
		t.Errorf("stderr = %q, want %q", errOut.String(), want)
	}
}

// TestListText: one line per use, the wide columns on request, stale projects named, and the
// store on the error stream.
func TestListText(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	rep := &ListReport{Store: map[string]string{"kind": KindAbox, "why": "Engine"},
		Secrets: []Listing{
			{Name: "a.token", Stored: true, Source: "env", Reference: "A", SyncedAt: &at, UsedBy: []Use{
				{Need: Need{"a.token", UseEnv, "A"}, Project: "alpha"}, {Need: Need{"a.token", UseServer, "github"}, Project: "beta", Stale: true}}},
			{Name: "b.token"},
		},
		Stale: []StaleProject{{Project: "beta", Profile: "work", Workspace: "/w/beta", Reason: "agentbox.yaml is gone"}, {Profile: "home", Reason: "bad registry"}}}
	var out, errOut bytes.Buffer
	rep.WriteText(&out, &errOut, true)
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	want := []string{
		"secret   store  source  reference  last sync             used by",
		"a.token  yes    env     A          2026-01-02T03:04:05Z  alpha → env A",
		"                                                         beta → server github (stale project)",
		"b.token  no     -       -          -                     — nothing uses it",
		"stale: project beta (profile work, /w/beta): agentbox.yaml is gone; its uses above come from its registry entry and approved manifest",
		"stale: profile home: bad registry; its uses above come from its registry entry and approved manifest",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("ls =\n%s\nwant\n%s", out.String(), strings.Join(want, "\n"))
	}
	if errOut.String() != "store: abox (Engine)\n" {
		t.Errorf("stderr = %q", errOut.String())
	}
	out.Reset()
	(&ListReport{Store: rep.Store}).WriteText(&out, &errOut, false)
	if out.String() != "no secrets\n" {
		t.Errorf("empty ls = %q", out.String())
	}
}

// TestExposure: the warning lists every attached secret, sorted, and the hint the number of
// allowed domains when known.
func TestExposure(t *testing.T) {
	if w, h := Exposure(nil, 3); w != "" || h != "" {
		t.Errorf("Exposure of nothing = %q, %q", w, h)
	}
	w, h := Exposure(map[string]string{"B": "b.token", "A": "a.token"}, 3)
	if w != "the agent holds secrets in its environment: 2 secrets: A←a.token, B←b.token" || !strings.HasPrefix(h, "the agent can read, print and send them to any of the 3 allowed domains — ") {
		t.Errorf("Exposure = %q, %q", w, h)
	}
	w, h = Exposure(map[string]string{"A": "a.token"}, -1)
	if !strings.Contains(w, ": 1 secret: A←a.token") || !strings.Contains(h, "send them to any allowed domain — ") {
		t.Errorf("Exposure of one, domains unknown = %q, %q", w, h)
	}
}
