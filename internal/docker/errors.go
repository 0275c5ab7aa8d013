package docker

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// ErrNotFound is matched (with [errors.Is]) by an [*ExitError] whose stderr says the container,
// image, network, volume, object or path does not exist.
var ErrNotFound = errors.New("not found")

// ErrDaemonUnreachable is matched (with [errors.Is]) by an [*ExitError] whose stderr says the CLI
// could not reach the Docker daemon.
var ErrDaemonUnreachable = errors.New("docker daemon unreachable")

// ExitError is a docker invocation that exited with a non-zero status.
type ExitError struct {
	Args   []string // the argv, without "docker"
	Code   int      // exit status; 128+N when killed by signal N
	Stderr []byte   // what the CLI printed on stderr (the last [StderrTail] bytes of a stream)
	// Log is the tail of the combined output of a failed [Client.Build]; nil otherwise.
	Log []byte

	kind error // ErrNotFound, ErrDaemonUnreachable or nil
}

// newExitError builds the error for a finished invocation and classifies its stderr.
func newExitError(args []string, res Result) *ExitError {
	return &ExitError{
		Args:   args,
		Code:   res.ExitCode,
		Stderr: res.Stderr,
		kind:   classify(res.Stderr),
	}
}

// Error returns "docker <command>: exit N: <first useful stderr line>".
func (e *ExitError) Error() string {
	msg := fmt.Sprintf("docker %s: exit %d", commandName(e.Args), e.Code)
	if line := firstUsefulLine(e.Stderr); line != "" {
		msg += ": " + line
	}
	return msg
}

// Unwrap returns [ErrNotFound] or [ErrDaemonUnreachable] when stderr says so, so that errors.Is
// works through any wrapping.
func (e *ExitError) Unwrap() error { return e.kind }

// commandName is the command words of argv for messages: "network create" for a management
// command, "exec" or "run" for a top-level one. Object names and flags are left out; stderr names
// the object.
func commandName(args []string) string {
	switch {
	case len(args) == 0:
		return "(no args)"
	case len(args) > 1 && isManagementCommand(args[0]) && !strings.HasPrefix(args[1], "-"):
		return args[0] + " " + args[1]
	default:
		return args[0]
	}
}

// isManagementCommand reports whether a top-level word takes a subcommand ("docker network
// create").
func isManagementCommand(word string) bool {
	switch word {
	case "builder", "buildx", "checkpoint", "config", "container", "context", "image", "manifest",
		"network", "node", "plugin", "secret", "service", "stack", "swarm", "system", "trust", "volume":
		return true
	}
	return false
}

// maxMessageLine bounds the stderr line quoted in an error message.
const maxMessageLine = 300

// noisePrefixes start stderr lines that never explain a failure.
var noisePrefixes = []string{
	"Unable to find image ",    // create/run, before the pull that failed
	"exit status ",             // CLI 28 echoes its own status after some errors
	"Run 'docker ",             // usage hint after a flag error
	"See 'docker ",             // usage hint
	"Sending build context to", // legacy builder progress
}

// errorPrefixes are stripped from the line quoted in a message; they add nothing to "docker x:".
var errorPrefixes = []string{"docker: ", "Error response from daemon: ", "Error: "}

// firstUsefulLine returns the first stderr line that explains the failure: blank lines, the
// legacy builder's DEPRECATED banner (and its indented continuation) and known noise are
// skipped, and the "Error response from daemon:" prefix is dropped.
func firstUsefulLine(stderr []byte) string {
	inBanner := false
	for _, line := range strings.Split(stripANSI(string(stderr)), "\n") {
		line = strings.TrimRight(line, "\r \t")
		switch {
		case strings.HasPrefix(line, "DEPRECATED:"):
			inBanner = true
			continue
		case inBanner && (line == "" || line[0] == ' ' || line[0] == '\t'):
			continue
		}
		inBanner = false
		line = strings.TrimSpace(line)
		if line == "" || hasAnyPrefix(line, noisePrefixes) {
			continue
		}
		return truncate(trimErrorPrefixes(line), maxMessageLine)
	}
	return ""
}

func trimErrorPrefixes(line string) string {
	for _, p := range errorPrefixes {
		line = strings.TrimPrefix(line, p)
	}
	return line
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// notFoundRE matches the daemon's "does not exist" messages. Docker 20.10 words them
// differently per object: "No such container: x", "no such image: x", "network x not found",
// "get x: no such volume", "No such object: x", "Could not find the file /p in container x".
var notFoundRE = regexp.MustCompile(`(?i)no such (container|image|network|volume|object)` +
	`|network \S+ not found|could not find the file `)

// unreachableRE matches the CLI's messages for a daemon it cannot reach.
var unreachableRE = regexp.MustCompile(`Cannot connect to the Docker daemon|Is the docker daemon running`)

// classify maps stderr to a sentinel. Not-found is only believed on lines the CLI itself writes
// ("Error…" prefixes), so that a command run by `docker exec` cannot fake it in its own output.
func classify(stderr []byte) error {
	for _, line := range strings.Split(string(stderr), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case unreachableRE.MatchString(line):
			return ErrDaemonUnreachable
		case isCLIError(line) && notFoundRE.MatchString(line):
			return ErrNotFound
		}
	}
	return nil
}

func isCLIError(line string) bool {
	return strings.HasPrefix(line, "Error") || strings.HasPrefix(line, "docker: Error")
}

// onlyNotFound reports whether every error line in stderr says that something does not exist,
// so that removing objects that are already gone is not a failure.
func onlyNotFound(stderr []byte) bool {
	found := false
	for _, line := range strings.Split(string(stderr), "\n") {
		line = strings.TrimSpace(line)
		if !isCLIError(line) {
			continue
		}
		if !notFoundRE.MatchString(line) {
			return false
		}
		found = true
	}
	return found
}

// inProgressRE matches the daemon's refusal to remove a container another request is removing.
var inProgressRE = regexp.MustCompile(`removal of container (\S+) is already in progress`)

// removalsInProgress returns the containers stderr says another request is already removing,
// and whether it holds any other error than those and "no such container".
func removalsInProgress(stderr []byte) (names []string, others bool) {
	for _, line := range strings.Split(string(stderr), "\n") {
		line = strings.TrimSpace(line)
		if !isCLIError(line) {
			continue
		}
		if m := inProgressRE.FindStringSubmatch(line); m != nil {
			names = append(names, m[1])
		} else if !notFoundRE.MatchString(line) {
			others = true
		}
	}
	return names, others
}

// ansiRE matches the SGR colour sequences the legacy builder wraps around a step's stderr.
var ansiRE = regexp.MustCompile("\x1b\\[[0-9;]*m")

func stripANSI(s string) string { return ansiRE.ReplaceAllString(s, "") }

// lastLines returns at most n trailing lines of b, without colour sequences.
func lastLines(b []byte, n int) []byte {
	b = bytes.TrimRight(b, "\n")
	i := len(b)
	for k := 0; k < n && i > 0; k++ {
		i = bytes.LastIndexByte(b[:i], '\n')
		if i < 0 {
			i = 0
			break
		}
	}
	if i > 0 {
		i++ // skip the newline itself
	}
	return []byte(stripANSI(string(b[i:])) + "\n")
}
