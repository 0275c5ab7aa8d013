package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// BuildOptions describes one image build.
type BuildOptions struct {
	Tag        string // e.g. "abox-agent:3f2a…"
	Dockerfile string // path to the Dockerfile; "" means ContextDir/Dockerfile
	ContextDir string // the build context, sent whole to the daemon
	NoCache    bool
	Labels     map[string]string
	// BuildArgs are --build-arg values. They appear in argv and in the image's history, so they
	// must never carry a secret.
	BuildArgs map[string]string
	// Progress, when set, receives one updating line, "step N/M · <instruction> · <elapsed>",
	// redrawn in place with a carriage return and ended with a newline. Meant for a terminal.
	Progress io.Writer
	// Log, when set, receives the full build output (stdout and stderr) as it arrives.
	Log io.Writer
}

// buildLogTail is how many trailing lines of output a failed build's [ExitError.Log] keeps.
const buildLogTail = 50

// Build builds an image with the legacy builder (DOCKER_BUILDKIT=0 in the CLI's environment:
// BuildKit is absent on Debian's docker.io, and `DOCKER_BUILDKIT=0` must work everywhere).
// Intermediate containers are removed even when a step fails (--force-rm): the legacy builder
// otherwise leaves the failed step's container behind.
//
// On failure the [*ExitError] has Code set to the failed RUN step's own exit status (the legacy
// builder exits with it, not with 1) and Log holding the tail of the output.
func (c *Client) Build(ctx context.Context, opts BuildOptions) error {
	if opts.ContextDir == "" || opts.Tag == "" {
		return errors.New("docker build: tag and context directory are required")
	}
	out := newBuildOutput(opts.Log, newProgress(opts.Progress, time.Now))
	stopTicker := out.progress.tickEvery(time.Second)
	_, err := c.Run(ctx, Invocation{
		Args:       buildArgs(opts),
		Env:        []string{"DOCKER_BUILDKIT=0"},
		Stdout:     out,
		Stderr:     out,
		StreamOnly: true,
	})
	stopTicker()
	out.progress.finish()
	var ee *ExitError
	if errors.As(err, &ee) {
		ee.Log = lastLines(out.tail.Bytes(), buildLogTail)
	}
	return err
}

func buildArgs(opts BuildOptions) []string {
	args := []string{"build", "--force-rm", "--tag", opts.Tag}
	if opts.Dockerfile != "" {
		args = append(args, "--file", opts.Dockerfile)
	}
	if opts.NoCache {
		args = append(args, "--no-cache")
	}
	args = append(args, labelArgs(opts.Labels)...)
	for _, k := range slices.Sorted(maps.Keys(opts.BuildArgs)) {
		args = append(args, "--build-arg", k+"="+opts.BuildArgs[k])
	}
	return append(args, opts.ContextDir)
}

// buildOutput receives the build's stdout and stderr (the runner serialises the writes). It
// copies them to the log, keeps a tail for the error, and feeds "Step N/M :" lines to progress.
type buildOutput struct {
	log      io.Writer
	logErr   error
	tail     tailBuffer
	partial  []byte
	progress *progress
}

func newBuildOutput(log io.Writer, p *progress) *buildOutput {
	return &buildOutput{log: log, progress: p, tail: tailBuffer{max: StderrTail}}
}

func (b *buildOutput) Write(p []byte) (int, error) {
	if b.log != nil && b.logErr == nil {
		_, b.logErr = b.log.Write(p)
	}
	_, _ = b.tail.Write(p)
	b.partial = append(b.partial, p...)
	for {
		i := bytes.IndexByte(b.partial, '\n')
		if i < 0 {
			break
		}
		b.line(string(b.partial[:i]))
		b.partial = b.partial[i+1:]
	}
	if len(b.partial) > 64<<10 { // a runaway line cannot be a step header
		b.partial = b.partial[:0]
	}
	return len(p), nil
}

func (b *buildOutput) line(s string) {
	if n, m, instr, ok := parseStep(s); ok {
		b.progress.setStep(n, m, instr)
	}
}

// stepRE matches the legacy builder's step headers: "Step 2/5 : RUN apt-get update".
var stepRE = regexp.MustCompile(`^Step (\d+)/(\d+) : (.*)$`)

// parseStep parses a legacy builder step header.
func parseStep(line string) (n, m int, instr string, ok bool) {
	sm := stepRE.FindStringSubmatch(strings.TrimRight(stripANSI(line), "\r"))
	if sm == nil {
		return 0, 0, "", false
	}
	n, err1 := strconv.Atoi(sm[1])
	m, err2 := strconv.Atoi(sm[2])
	if err1 != nil || err2 != nil {
		return 0, 0, "", false
	}
	return n, m, strings.Join(strings.Fields(sm[3]), " "), true
}

// maxInstruction bounds the instruction shown in the progress line.
const maxInstruction = 60

// progressLine formats the progress line: "step 2/5 · RUN apt-get update · 12s".
func progressLine(n, m int, instr string, elapsed time.Duration) string {
	return fmt.Sprintf("step %d/%d · %s · %s", n, m, truncate(instr, maxInstruction),
		elapsed.Round(time.Second))
}

// progress draws the progress line in place. A nil writer makes every method a no-op.
type progress struct {
	w     io.Writer
	now   func() time.Time
	start time.Time

	mu    sync.Mutex
	n, m  int
	instr string
	width int // runes drawn last time, to blank out a longer previous line
}

func newProgress(w io.Writer, now func() time.Time) *progress {
	return &progress{w: w, now: now, start: now()}
}

func (p *progress) setStep(n, m int, instr string) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n, p.m, p.instr = n, m, instr
	p.draw("")
}

// draw redraws the line, followed by end; the caller holds mu. Nothing is drawn before the first
// step.
func (p *progress) draw(end string) {
	if p.n == 0 {
		return
	}
	line := progressLine(p.n, p.m, p.instr, p.now().Sub(p.start))
	pad := p.width - utf8.RuneCountInString(line)
	p.width = utf8.RuneCountInString(line)
	if pad < 0 {
		pad = 0
	}
	_, _ = io.WriteString(p.w, "\r"+line+strings.Repeat(" ", pad)+end)
}

// tickEvery redraws the line every d so that the elapsed time moves during a long step. The
// returned function stops the ticker.
func (p *progress) tickEvery(d time.Duration) (stop func()) {
	if p.w == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				p.mu.Lock()
				p.draw("")
				p.mu.Unlock()
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// finish draws the line a last time and ends it with a newline.
func (p *progress) finish() {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.draw("\n")
}
