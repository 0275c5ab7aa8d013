package docker

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestParseStep(t *testing.T) {
	tests := []struct {
		line  string
		n, m  int
		instr string
		ok    bool
	}{
		{"Step 2/5 : RUN echo hello && echo err >&2", 2, 5, "RUN echo hello && echo err >&2", true},
		{"Step 10/12 : COPY  extra-ca/   /usr/local/share/ca-certificates/", 10, 12,
			"COPY extra-ca/ /usr/local/share/ca-certificates/", true},
		{"Step 1/2 : FROM abox-test-base:bookworm\r", 1, 2, "FROM abox-test-base:bookworm", true},
		{" ---> Running in 44790c04d9bc", 0, 0, "", false},
		{"echo Step 1/2 : fake", 0, 0, "", false},
	}
	for _, tc := range tests {
		n, m, instr, ok := parseStep(tc.line)
		if n != tc.n || m != tc.m || instr != tc.instr || ok != tc.ok {
			t.Errorf("parseStep(%q) = %d, %d, %q, %v, want %d, %d, %q, %v",
				tc.line, n, m, instr, ok, tc.n, tc.m, tc.instr, tc.ok)
		}
	}
}

func TestProgressLine(t *testing.T) {
	got := progressLine(2, 5, "RUN apt-get update", 12400*time.Millisecond)
	if want := "step 2/5 · RUN apt-get update · 12s"; got != want {
		t.Errorf("progressLine = %q, want %q", got, want)
	}
	long := progressLine(1, 1, "RUN "+strings.Repeat("x", 200), time.Minute+5*time.Second)
	if want := "step 1/1 · RUN " + strings.Repeat("x", maxInstruction-5) + "… · 1m5s"; long != want {
		t.Errorf("progressLine(long) = %q, want %q", long, want)
	}
}

// fakeClock advances by step on every reading.
type fakeClock struct {
	t    time.Time
	step time.Duration
}

func (c *fakeClock) now() time.Time { c.t = c.t.Add(c.step); return c.t }

func TestBuildOutputDrawsProgress(t *testing.T) {
	var progressOut, log bytes.Buffer
	clock := &fakeClock{t: time.Unix(0, 0), step: time.Second}
	out := newBuildOutput(&log, newProgress(&progressOut, clock.now))
	chunks := []string{
		"Sending build context to Docker daemon  2.048kB\r\r\n",
		"Step 1/3 : FROM abox-test-base:bookworm\n ---> e8c0457d0e74\nStep 2/3 : RUN long-",
		"command --with-args\n ---> Running in 1\n",
		"Step 3/3 : LABEL a=b\n",
	}
	for _, c := range chunks {
		if _, err := out.Write([]byte(c)); err != nil {
			t.Fatal(err)
		}
	}
	out.progress.finish()
	want := "\rstep 1/3 · FROM abox-test-base:bookworm · 1s" +
		"\rstep 2/3 · RUN long-command --with-args · 2s" + // as long as the first: no padding
		"\rstep 3/3 · LABEL a=b · 3s" + strings.Repeat(" ", 19) + // blanks the longer line
		"\rstep 3/3 · LABEL a=b · 4s\n"
	if got := progressOut.String(); got != want {
		t.Errorf("progress =\n%q\nwant\n%q", got, want)
	}
	if got := log.String(); got != strings.Join(chunks, "") {
		t.Errorf("log = %q, want every byte written", got)
	}
}

// TestProgressNilWriter: a build with no progress writer (not a terminal) still logs every
// byte, but draws nothing, never reads the clock to draw, and starts no ticker.
func TestProgressNilWriter(t *testing.T) {
	reads := 0
	now := func() time.Time { reads++; return time.Unix(0, 0) }
	var log bytes.Buffer
	out := newBuildOutput(&log, newProgress(nil, now))
	before := runtime.NumGoroutine()
	stop := out.progress.tickEvery(time.Millisecond)
	if n := runtime.NumGoroutine(); n != before {
		t.Errorf("tickEvery with nothing to draw on started %d goroutine(s)", n-before)
	}
	const chunk = "Step 1/2 : FROM x\n ---> e8c0457d0e74\nStep 2/2 : RUN y\n"
	if _, err := out.Write([]byte(chunk)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond) // a ticker, if one ran, would have drawn by now
	stop()
	out.progress.finish()
	if log.String() != chunk {
		t.Errorf("log = %q, want %q", log.String(), chunk)
	}
	if reads != 1 { // the start time, read once when the progress is made
		t.Errorf("the clock was read %d times, want once: something drew", reads)
	}
}

func TestProgressNothingBeforeFirstStep(t *testing.T) {
	var w bytes.Buffer
	p := newProgress(&w, time.Now)
	p.finish()
	if w.Len() != 0 {
		t.Errorf("progress before any step wrote %q, want nothing", w.String())
	}
}

func TestBuildArgs(t *testing.T) {
	got := strings.Join(buildArgs(BuildOptions{
		Tag: "abox-agent:1", Dockerfile: "/s/Dockerfile", ContextDir: "/s/ctx", NoCache: true,
		Labels: map[string]string{"abox.role": "agent", "abox.managed": "true"}, BuildArgs: map[string]string{"B": "2", "A": "1"},
	}), " ")
	want := "build --force-rm --tag abox-agent:1 --file /s/Dockerfile --no-cache --label abox.managed=true " +
		"--label abox.role=agent --build-arg A=1 --build-arg B=2 /s/ctx"
	if got != want {
		t.Errorf("buildArgs =\n%s\nwant\n%s", got, want)
	}
}
