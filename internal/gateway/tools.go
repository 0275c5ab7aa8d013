package gateway

import (
	"context"
	"errors"
	"fmt"
)

// The reasons [RunningTools] finds no tools, matched by the Kind of its [*ToolsError].
var (
	ErrNotRunning   = errors.New("the gateway is not running")
	ErrNoProbeImage = errors.New("no netd image to probe the gateway from")
	ErrNoAnswer     = errors.New("the gateway does not answer")
)

// ToolsError is a profile's gateway whose tools could not be listed.
type ToolsError struct {
	Profile string
	Kind    error  // ErrNotRunning, ErrNoProbeImage or ErrNoAnswer
	Detail  string // the probe's error, token removed (ErrNoAnswer)
}

func (e *ToolsError) Error() string {
	switch e.Kind {
	case ErrNotRunning:
		return fmt.Sprintf("the %s gateway is not running", e.Profile)
	case ErrNoProbeImage:
		return fmt.Sprintf("no netd image to probe the %s gateway from", e.Profile)
	}
	return fmt.Sprintf("the %s gateway does not answer: %s", e.Profile, e.Detail)
}

func (e *ToolsError) Is(target error) bool { return target == e.Kind }

// RunningTools lists the tools of the profile's running gateway, probed from a netd image on
// its network as the health check probes it. An error of the plan is returned as [LoadPlan]
// returns it; a gateway that is not running, has no image to probe from, or does not answer is a
// [*ToolsError].
func RunningTools(ctx context.Context, e *Env, profile string) (*ProbeResult, error) {
	plan, token, err := LoadPlan(ctx, e, profile, false)
	if err != nil {
		return nil, err
	}
	mgr := e.Manager()
	ct, err := mgr.Inspect(ctx, profile)
	if err != nil {
		return nil, err
	}
	if ct == nil || !ct.State.Running {
		return nil, &ToolsError{Profile: profile, Kind: ErrNotRunning}
	}
	img := ProbeImage(ctx, e, plan, "")
	if img == "" {
		return nil, &ToolsError{Profile: profile, Kind: ErrNoProbeImage}
	}
	res, err := mgr.Probe(ctx, profile, e.Config.Network, img, plan.Container.Port, token)
	if err != nil {
		return nil, err
	}
	if !res.OK {
		return nil, &ToolsError{Profile: profile, Kind: ErrNoAnswer, Detail: Redact(res.Error, token)}
	}
	return res, nil
}
