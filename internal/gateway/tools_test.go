package gateway

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/manifest"
)

// TestRunningTools: a gateway that is not running, one with no netd image to probe from, one
// that answers with its tools and one that does not answer, its error without the token.
func TestRunningTools(t *testing.T) {
	ctx := context.Background()
	e := newReconcileEnv(t)
	e.bind(t, "a00000000000", &manifest.Manifest{Project: "alpha", Servers: []string{"fetch"}})
	e.fake.On("container inspect --format {{json .}} abox-gw-dev", notFound).Once()
	var te *ToolsError
	if _, err := RunningTools(ctx, e.Env, "dev"); !errors.Is(err, ErrNotRunning) || !errors.As(err, &te) ||
		err.Error() != "the dev gateway is not running" {
		t.Errorf("missing gateway: %v", err)
	}

	e.fake.On("container inspect --format {{json .}} abox-gw-dev", okJSON(`{"Id":"c1","Args":["--servers=fetch"],`+
		`"State":{"Status":"running","Running":true},"Config":{"Image":"gw","Labels":{"abox.managed":"true","abox.role":"gateway"}}}`))
	if _, err := RunningTools(ctx, e.Env, "dev"); !errors.Is(err, ErrNoProbeImage) {
		t.Errorf("no netd image: %v, want ErrNoProbeImage", err)
	}

	write(t, filepath.Join(e.Paths.Project("/src/alpha").Artifacts(), "runspec.json"), `{"netd":{"image":"`+probeImage+`"}}`)
	imagesPresent(e.fake)
	e.fake.On("run --rm --interactive", okJSON(probeOK)).Once()
	res, err := RunningTools(ctx, e.Env, "dev")
	if err != nil || strings.Join(res.ToolNames(), ",") != "get_issue" {
		t.Errorf("healthy gateway: %+v, %v; want get_issue", res, err)
	}

	e.fake.On("run --rm --interactive", okJSON(`{"ok":false,"error":"401 from http://abox-gw-dev:8812/mcp","tools":[]}`))
	if _, err := RunningTools(ctx, e.Env, "dev"); !errors.Is(err, ErrNoAnswer) || !strings.HasPrefix(err.Error(), "the dev gateway does not answer: 401") {
		t.Errorf("unanswering gateway: %v, want ErrNoAnswer", err)
	}
	if _, err := RunningTools(ctx, e.Env, "nosuch"); !errors.Is(err, ErrNoProfile) {
		t.Errorf("unknown profile: %v, want ErrNoProfile", err)
	}
	noToken(t, e.fake)
}
