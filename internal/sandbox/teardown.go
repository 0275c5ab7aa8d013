package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/telemetry"
)

// Deadlines of the teardown's steps. Each starts when its step starts, never when the run did:
// a run may last up to a day, and its teardown must still have all of its time.
const (
	stopTimeout    = 30 * time.Second // docker stop of netd: its 5 s grace, then SIGKILL
	removeTimeout  = 30 * time.Second // docker rm -f of one container
	harvestTimeout = 3 * time.Minute  // docker cp of netd's logs, up to their caps
)

// stepContext returns base bounded by d from now: the deadline of one teardown step.
func stepContext(base context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(base, d)
}

// teardown ends netd's part, so that it writes its counters, and meanwhile reads the agent's
// exit code and removes the agent (the two are independent: an agent still running is killed by
// the forced removal, and offline once netd stops); then it harvests netd's logs from netd's own
// filesystem and removes netd, or retires it ("Finishing netd, and retiring it"). It never fails
// the run; problems become notes. base carries no cancellation (see [Sandbox.Run]); every step
// bounds itself from when it starts.
//
// netd is finished rather than stopped when the agent ran and nothing is kept: a netd that never
// reported ready does not serve signals yet, a dead one cannot, and a kept one is left stopped.
func (s *Sandbox) teardown(base context.Context, o Options, out *Outcome, c *clock) {
	removed := make(chan error, 1)
	go func() {
		if out.exitToRead {
			s.readExit(base, out)
		}
		if o.Keep {
			removed <- nil
			return
		}
		ctx, cancel := stepContext(base, removeTimeout)
		defer cancel()
		removed <- s.Docker.Remove(ctx, true, true, out.Agent)
	}()
	finished := false
	if out.exitToRead && !o.Keep && out.Result != "netd-died" {
		if err := s.finishNetd(base, out.Netd); err != nil {
			out.note("finishing netd: %v; stopping it instead", err)
		} else {
			finished = true
		}
	}
	if !finished {
		s.stopNetd(base, out)
	}
	if err := <-removed; err != nil {
		out.note("removing the agent container: %v", err)
	}
	if finished {
		c.mark("netd finish")
	} else {
		c.mark("netd stop")
	}
	hctx, cancel := stepContext(base, harvestTimeout)
	s.harvest(hctx, out)
	cancel()
	c.mark("harvest")
	switch {
	case o.Keep:
		out.note("kept containers %s and %s (remove them with `docker rm -f`)", out.Agent, out.Netd)
	case finished && o.Retire && s.retire(out.Netd) == nil:
	default:
		rctx, cancel := stepContext(base, removeTimeout)
		if err := s.Docker.Remove(rctx, true, true, out.Netd); err != nil {
			out.note("removing netd: %v", err)
		}
		cancel()
	}
	s.checkMasks(out)
	c.mark("teardown")
}

// stopNetd stops netd with `docker stop`: its 5 s grace, then SIGKILL.
func (s *Sandbox) stopNetd(base context.Context, out *Outcome) {
	sctx, cancel := stepContext(base, stopTimeout)
	defer cancel()
	if err := s.Docker.Stop(sctx, out.Netd, 5*time.Second); err != nil && !strings.Contains(err.Error(), "not found") {
		out.note("stopping netd: %v", err)
	}
}

// harvest copies netd's log directory into the run directory and reads it.
func (s *Sandbox) harvest(ctx context.Context, out *Outcome) {
	dest := filepath.Join(out.Dir, "netd")
	if err := s.Docker.CopyFrom(ctx, out.Netd, policy.LogDir+"/.", dest); err != nil {
		if _, serr := os.Stat(filepath.Join(dest, policy.CountersLog)); serr != nil {
			out.note("harvesting netd's logs: %v", err)
			return
		}
		// A warden finishing what its abox began: netd's logs were copied out before it went.
		out.note("netd was gone; its logs are those harvested before")
	}
	h, err := telemetry.ReadHarvest(dest)
	if err != nil {
		out.note("reading netd's logs: %v", err)
		return
	}
	out.Harvest = h
	if h.Counters != nil && out.counterBase != nil {
		s.sinceSpare(dest, out)
	}
	if h.Counters == nil && out.Result != "refused" {
		out.note("netd wrote no counters (it did not shut down cleanly)")
	}
}

// sinceSpare leaves out of a run on a spare what the spare counted before the run's policy verify:
// counters.json becomes what came after, netd's own file is kept as spareCountersFile.
func (s *Sandbox) sinceSpare(dest string, out *Outcome) {
	raw := *out.Harvest.Counters
	since := raw.Since(*out.counterBase)
	out.Harvest.Counters = &since
	if b, err := marshalIndent(since); err == nil {
		os.Rename(filepath.Join(dest, policy.CountersLog), filepath.Join(dest, spareCountersFile))
		os.WriteFile(filepath.Join(dest, policy.CountersLog), b, 0o600)
	}
	if n := raw.DroppedPkts - since.DroppedPkts; n > 0 {
		out.note("the spare netd had dropped %d packet(s) before this run; they are not counted as the run's", n)
	}
}

// spareCountersFile, in a run's netd log directory, is the counters netd wrote for a run on a
// spare: since the spare started, not since the run's policy verify.
const spareCountersFile = "counters-since-spare-start.json"

// Record appends the run to runs.jsonl and its denials to the review queue, and tells its
// warden that the run is recorded.
func (s *Sandbox) Record(o Options, out *Outcome) error {
	err := s.record(o, out)
	if err == nil {
		s.ward(out, phaseRecorded)
	}
	return err
}

func (s *Sandbox) record(o Options, out *Outcome) error {
	sha := o.promptSHA
	if sha == "" {
		sha = promptSHA(o.Prompt)
	}
	rec := telemetry.RunRecord{
		ID: out.ID, TS: out.Started.UTC().Format(time.RFC3339), Project: s.Spec.Project, Profile: o.Record.Profile,
		Kind: "run", PromptSHA: sha, DurationS: round2(out.Duration.Seconds()),
		ExitCode: out.ExitCode, SessionID: out.Summary.SessionID, Container: out.Agent,
		Transcript: out.Transcript, RunDir: out.Dir, PermissionMode: o.Record.PermissionMode, Servers: slices.Clone(o.Record.Servers),
		ToolCalls: len(out.Summary.ToolCalls), Outcome: out.Result, Notes: out.Notes, DroppedPackets: -1,
		Masks: out.MaskEvents,
	}
	if !out.Spare.IsZero() {
		rec.NetdStarted = out.Spare.UTC().Format(time.RFC3339Nano)
	}
	if o.Isolated {
		rec.Workspace, rec.Branch = manifest.WorkspaceIsolated, o.Branch
	}
	if o.Shell {
		rec.Kind, rec.PromptSHA, rec.PermissionMode = "shell", "interactive", "interactive"
	}
	if rec.Servers == nil {
		rec.Servers = []string{}
	}
	if x := out.Exec; x != nil {
		rec.ExecChanges, rec.ExecCapped, rec.ExecGitCapped = x.Changes, x.Capped, x.GitCapped
	}
	if h := out.Harvest; h != nil {
		rec.DeniedDomains = len(h.DeniedNames())
		rec.RefusedConns = len(h.RefusedConnections())
		rec.DroppedPackets = h.Dropped()
		rec.LogCaps = h.LogCaps()
		rec.Model = h.ModelUsage()
		if err := telemetry.AppendDenials(filepath.Join(s.Project.Dir, "denied.jsonl"), out.ID, rec.TS, h); err != nil {
			return err
		}
	}
	writeJSON(filepath.Join(out.Dir, "phases.json"), out.Phases)
	return telemetry.AppendRun(s.Project.RunsIndex(), rec)
}

func marshalIndent(v any) ([]byte, error) { return json.MarshalIndent(v, "", "  ") }

func round2(f float64) float64 { return float64(int64(f*100+0.5)) / 100 }

func splitLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// promptSHA is the first 16 hex digits of the prompt's sha256; the prompt itself is not stored.
func promptSHA(prompt string) string {
	sum := sha256.Sum256([]byte(prompt))
	return hex.EncodeToString(sum[:])[:16]
}
