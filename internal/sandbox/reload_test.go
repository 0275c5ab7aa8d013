package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/docker/dockertest"
)

// hooks records what Reload says; ready is the daemon check's answer.
type reloadLog struct{ warn, progress []string }

func (l *reloadLog) hooks(ready error) ReloadHooks {
	return ReloadHooks{
		Ready:    func(context.Context) error { return ready },
		Warn:     func(f string, a ...any) { l.warn = append(l.warn, fmt.Sprintf(f, a...)) },
		Progress: func(f string, a ...any) { l.progress = append(l.progress, fmt.Sprintf(f, a...)) },
	}
}

func TestReloadSignalsEveryRunningNetd(t *testing.T) {
	fake := dockertest.New(t)
	fake.On("ps --no-trunc --format {{json .}} --filter label=abox.hash=h1 --filter label=abox.role=netd",
		docker.Result{Stdout: []byte(`{"ID":"c1","Names":"abox-a-netd"}` + "\n" + `{"ID":"c2","Names":"abox-b-netd"}` + "\n")})
	fake.On("kill --signal HUP c1", docker.Result{})
	fake.On("kill --signal HUP c2", docker.Result{ExitCode: 1, Stderr: []byte("no such container")})
	var log reloadLog
	r := Reload(context.Background(), docker.NewClient(fake, nil), "h1", log.hooks(nil))
	if r.Skipped != nil || len(r.Reloaded) != 1 || r.Reloaded[0] != "abox-a-netd" || len(r.Failed) != 1 || !strings.HasPrefix(r.Failed[0], "abox-b-netd: ") {
		t.Fatalf("Reload = %+v", r)
	}
	if len(log.progress) != 1 || len(log.warn) != 1 {
		t.Errorf("progress %q, warnings %q: want one of each", log.progress, log.warn)
	}
	if s := r.String(); !strings.HasPrefix(s, "reloaded 1 of 2 running sandboxes; not reloaded: abox-b-netd: ") {
		t.Errorf("String() = %q", s)
	}
}

func TestReloadSkipped(t *testing.T) {
	down := errors.New("daemon down")
	fake := dockertest.New(t) // no call may reach docker when the daemon does not answer
	var log reloadLog
	r := Reload(context.Background(), docker.NewClient(fake, nil), "h1", log.hooks(down))
	if !errors.Is(r.Skipped, down) || r.String() != "running sandboxes were not reloaded: daemon down" {
		t.Fatalf("Reload = %+v (%s)", r, r)
	}

	fake = dockertest.New(t)
	fake.On("ps", docker.Result{ExitCode: 1, Stderr: []byte("boom")})
	r = Reload(context.Background(), docker.NewClient(fake, nil), "h1", log.hooks(nil))
	if r.Skipped == nil || !strings.HasPrefix(r.String(), "running sandboxes were not reloaded: listing them: ") || len(log.warn) != 1 {
		t.Fatalf("Reload = %+v, warnings %q", r, log.warn)
	}
}

func TestReloadedString(t *testing.T) {
	for _, c := range []struct {
		r    Reloaded
		want string
	}{
		{Reloaded{}, "no sandbox of this project is running; the next run uses the new allowlist"},
		{Reloaded{Reloaded: []string{"a"}}, "reloaded 1 running sandbox: a"},
		{Reloaded{Reloaded: []string{"a", "b"}}, "reloaded 2 running sandboxes: a, b"},
		{Reloaded{Failed: []string{"a: x"}}, "reloaded 0 of 1 running sandbox; not reloaded: a: x; it keeps the old allowlist until it is restarted or reloaded with `docker kill --signal HUP <name>`"},
	} {
		if got := c.r.String(); got != c.want {
			t.Errorf("%+v.String() = %q, want %q", c.r, got, c.want)
		}
	}
}
