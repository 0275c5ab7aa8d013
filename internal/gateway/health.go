package gateway

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/termtext"
)

// probeDelays are the waits between probe attempts while a gateway starts: it lists every
// server's tools (starting each once) before it answers.
var probeDelays = []time.Duration{
	500 * time.Millisecond, time.Second, 2 * time.Second, 3 * time.Second,
	4 * time.Second, 5 * time.Second, 5 * time.Second, 5 * time.Second, 5 * time.Second,
}

// UnhealthyError says the gateway started but did not answer MCP.
type UnhealthyError struct {
	Profile string
	Reason  string
	// Unauthorized is set when the gateway refused the token: retrying cannot help.
	Unauthorized bool
}

func (e *UnhealthyError) Error() string {
	return fmt.Sprintf("the %s gateway does not answer MCP: %s", e.Profile, Redact(e.Reason, ""))
}

// probeUntilReady probes the gateway until it answers, it refuses the token, it stops running,
// or the attempts run out. A gateway that answers but does not refuse requests without its
// token is an [*OpenError]: retrying cannot help.
func (m *Manager) probeUntilReady(ctx context.Context, p *Plan, o UpOptions) (*ProbeResult, error) {
	var last *ProbeResult
	var lastErr error
	for i := 0; ; i++ {
		last, lastErr = m.Probe(ctx, p.Profile, p.Container.Network, o.ProbeImage, p.Container.Port, o.Token)
		switch {
		case lastErr == nil && last.OK && !last.AuthEnforced():
			return last, &OpenError{Profile: p.Profile, Auth: last.Auth}
		case lastErr == nil && last.OK:
			return last, nil
		case lastErr == nil && last.Unauthorized():
			return last, &UnhealthyError{Profile: p.Profile, Reason: last.Error, Unauthorized: true}
		case errors.Is(lastErr, docker.ErrNotFound): // the probe image is gone: retrying cannot help
			return nil, lastErr
		}
		if i == len(probeDelays) {
			break
		}
		if ct, err := m.inspect(ctx, p.Profile); err != nil || ct == nil || !ct.State.Running {
			return last, &UnhealthyError{Profile: p.Profile, Reason: "the container stopped"}
		}
		if err := m.sleep(ctx, probeDelays[i]); err != nil {
			return last, err
		}
	}
	if lastErr != nil {
		return nil, &UnhealthyError{Profile: p.Profile, Reason: lastErr.Error()}
	}
	return last, &UnhealthyError{Profile: p.Profile, Reason: last.Error}
}

// Probe runs one health probe: `abox mcp-probe` in image on the gateway's network, with the
// token on stdin. A result that is not OK is not an error; a probe that could not run is.
func (m *Manager) Probe(ctx context.Context, profile, network, image string, port int, token string) (*ProbeResult, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	res, err := m.Docker.Run(ctx, docker.Invocation{
		Args:  ProbeArgs(profile, network, image, port),
		Stdin: strings.NewReader(token + "\n"),
	})
	if r, perr := ParseProbe(res.Stdout); perr == nil {
		return r, nil
	}
	if err == nil {
		err = errors.New("the probe printed no result")
	}
	return nil, scrubErr(fmt.Errorf("probing the gateway: %w", err), token)
}

func (m *Manager) sleep(ctx context.Context, d time.Duration) error {
	if m.Sleep != nil {
		return m.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

var bearerRe = regexp.MustCompile(`(?i)(bearer\s+)[A-Za-z0-9._~+/=-]+`)

// Redact makes text from the gateway fit for a terminal: the token and any bearer credential
// removed, and every character that is not printable but newline and tab escaped
// ([termtext.Text]), since the gateway logs what agents send it and an escape sequence must not
// reach the user's terminal.
func Redact(text, token string) string {
	return bearerRe.ReplaceAllString(scrub(termtext.Text(text), token), "${1}«redacted»")
}

// scrubbed is an error whose message had the token removed; it still unwraps to the original.
type scrubbed struct {
	msg string
	err error
}

func (s *scrubbed) Error() string { return s.msg }
func (s *scrubbed) Unwrap() error { return s.err }

func scrubErr(err error, token string) error {
	if err == nil || token == "" || !strings.Contains(err.Error(), token) {
		return err
	}
	return &scrubbed{msg: scrub(err.Error(), token), err: err}
}
