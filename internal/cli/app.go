package cli

import (
	"context"
	"io"
	"os"
	"time"

	"golang.org/x/term"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/hostprobe"
	"github.com/aboxhq/abox/internal/paths"
)

// Version is abox's version, set at build time with -ldflags "-X …/cli.Version=…".
var Version = "0.1.0-dev"

// App holds every side effect a command may use. [Main] builds the real one; tests build their
// own.
type App struct {
	In       io.Reader
	Out, Err io.Writer
	// TTY is true when stdin and stderr are terminals: prompts and pickers are allowed.
	TTY bool
	// OutTTY is true when stdout is a terminal: a person reads it, so `abox run` shows its
	// escaped pretty view there, never the agent's raw stream.
	OutTTY bool
	// Color is true when stderr is a terminal and NO_COLOR is unset.
	Color   bool
	Env     func(string) (string, bool)
	Now     func() time.Time
	Version string
	// Verbose traces every docker invocation to Err.
	Verbose bool
	// Executable is the path of the running abox binary (baked into the netd image).
	Executable string
	// Probe asks the host's tools (npm, go) how they are configured; nil means
	// [hostprobe.System].
	Probe hostprobe.Probe

	paths        *paths.Paths
	dockerClient *docker.Client
	binarySum    string
}

// Paths returns the config and state locations, computed once.
func (a *App) Paths() (paths.Paths, error) {
	if a.paths != nil {
		return *a.paths, nil
	}
	p, err := paths.FromEnv(a.Env)
	if err != nil {
		return paths.Paths{}, withHint(err, "set HOME, or ABOX_CONFIG_HOME and ABOX_STATE_HOME")
	}
	a.paths = &p
	return p, nil
}

func (a *App) getenv(k string) string {
	v, _ := a.Env(k)
	return v
}

// Main runs abox with the process's arguments and returns the exit status.
func Main() int {
	exe, _ := os.Executable()
	isTTY := term.IsTerminal(int(os.Stdin.Fd())) && term.IsTerminal(int(os.Stderr.Fd()))
	_, noColor := os.LookupEnv("NO_COLOR")
	ctx, end, stop := notifyEnd(context.Background())
	defer stop()
	app := &App{
		In: os.Stdin, Out: endOnEPIPE{os.Stdout, end}, Err: endOnEPIPE{os.Stderr, end},
		TTY:        isTTY,
		OutTTY:     term.IsTerminal(int(os.Stdout.Fd())),
		Color:      term.IsTerminal(int(os.Stderr.Fd())) && !noColor,
		Env:        os.LookupEnv,
		Now:        time.Now,
		Version:    Version,
		Executable: exe,
	}
	return app.Run(ctx, os.Args[1:])
}

// Run executes the command line args and returns the exit status.
func (a *App) Run(ctx context.Context, args []string) int {
	root := newRootCmd(a)
	root.SetArgs(args)
	root.SetIn(a.In)
	root.SetOut(a.Out)
	root.SetErr(a.Err)
	if err := root.ExecuteContext(ctx); err != nil {
		return report(a.Err, interrupted(ctx, err))
	}
	return ExitOK
}
