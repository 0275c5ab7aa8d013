package dockertest

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Environment variables read by [FakeBinary].
const (
	// RepliesEnv names the replies file (format: see the package doc). Unset: no call matches.
	RepliesEnv = "ABOX_FAKE_DOCKER"
	// LogEnv names the log file. Unset: $WORK/docker.log, so a testscript can `grep` docker.log.
	LogEnv = "ABOX_FAKE_DOCKER_LOG"
)

// FakeBinary is the main function of a fake `docker` executable, to register with testscript:
//
//	testscript.Main(m, map[string]func(){"docker": dockertest.FakeBinary})
//
// It appends the call to the log, answers from the replies file named by $ABOX_FAKE_DOCKER
// (stdout, stderr, exit status) and exits. It always exits; it never returns.
//
// # Log format
//
// One line per call, appended under an exclusive lock so that concurrent calls do not interleave:
// the argv (without "docker") as a JSON array of strings, then, when the call received anything on
// stdin, a space, "<" and the stdin bytes in standard base64:
//
//	["network","create","--driver","bridge","abox-net"]
//	["secret","set","--stdin","op-token"] <c2VjcmV0LXZhbHVl
//
// Stdin is encoded so that `! grep SECRET docker.log` asserts that no secret reached an argv
// while still recording what went over stdin. [ReadLog] decodes the file. Stdin is not read when
// it is a terminal or character device. The log goes to $ABOX_FAKE_DOCKER_LOG, or to
// $WORK/docker.log when that is unset; with neither set the fake fails with status 125.
func FakeBinary() {
	os.Exit(fakeMain(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}

// fakeMain is FakeBinary with its surroundings passed in; it returns the exit status.
func fakeMain(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	fail := func(err error) int {
		fmt.Fprintf(stderr, "fake docker: %v\n", err)
		return 125
	}
	logPath := getenv(LogEnv)
	if logPath == "" && getenv("WORK") != "" {
		logPath = filepath.Join(getenv("WORK"), "docker.log")
	}
	if logPath == "" {
		return fail(fmt.Errorf("set %s (or WORK) to a log file", LogEnv))
	}
	in, err := readStdin(stdin)
	if err != nil {
		return fail(fmt.Errorf("reading stdin: %w", err))
	}
	block, err := answer(args, in, logPath, getenv(RepliesEnv))
	if err != nil {
		return fail(err)
	}
	if block == nil {
		fmt.Fprintf(stderr, "fake docker: no reply for %q\n", strings.Join(args, " "))
		return 125
	}
	time.Sleep(block.sleep)
	_, _ = stdout.Write(block.stdout.Bytes())
	_, _ = stderr.Write(block.stderr.Bytes())
	return block.exitCode
}

// readStdin reads all of stdin unless it is a terminal or another character device (such as
// /dev/null), which would block or say nothing.
func readStdin(r io.Reader) ([]byte, error) {
	if f, ok := r.(*os.File); ok {
		fi, err := f.Stat()
		if err != nil || fi.Mode()&os.ModeCharDevice != 0 {
			return nil, nil
		}
	}
	data, err := io.ReadAll(r)
	if len(data) == 0 {
		data = nil
	}
	return data, err
}

// answer logs the call and picks its reply, holding the log's lock so that the use of a "once"
// reply is decided and recorded atomically.
func answer(args []string, stdin []byte, logPath, repliesPath string) (*replyBlock, error) {
	lf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening log: %w", err)
	}
	defer lf.Close()
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
		return nil, fmt.Errorf("locking log: %w", err)
	}
	if _, err := lf.Write(logLine(args, stdin)); err != nil {
		return nil, fmt.Errorf("writing log: %w", err)
	}
	if repliesPath == "" {
		return nil, nil
	}
	data, err := os.ReadFile(repliesPath)
	if err != nil {
		return nil, fmt.Errorf("reading replies: %w", err)
	}
	blocks, err := parseReplies(data, repliesPath, filepath.Dir(repliesPath))
	if err != nil {
		return nil, err
	}
	return pickOnce(blocks, args, repliesPath+".used")
}

// pickOnce picks the reply and records a "once" block as used in usedPath.
func pickOnce(blocks []*replyBlock, args []string, usedPath string) (*replyBlock, error) {
	used, err := readUsed(usedPath)
	if err != nil {
		return nil, err
	}
	b := pick(blocks, args, used)
	if b == nil || !b.once {
		return b, nil
	}
	f, err := os.OpenFile(usedPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("recording a once reply: %w", err)
	}
	_, err = fmt.Fprintf(f, "%d\n", b.line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return b, err
}

func readUsed(path string) (map[int]bool, error) {
	used := map[int]bool{}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return used, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading once replies: %w", err)
	}
	for _, f := range strings.Fields(string(data)) {
		if n, err := strconv.Atoi(f); err == nil {
			used[n] = true
		}
	}
	return used, nil
}

// logLine formats one log line.
func logLine(args []string, stdin []byte) []byte {
	if args == nil {
		args = []string{}
	}
	line, _ := json.Marshal(args) // a []string always marshals
	if stdin != nil {
		line = append(line, " <"+base64.StdEncoding.EncodeToString(stdin)...)
	}
	return append(line, '\n')
}

// ReadLog reads a log written by [FakeBinary]. A missing file is an empty log.
func ReadLog(path string) ([]Call, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var calls []Call
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 64<<20)
	for n := 1; sc.Scan(); n++ {
		c, err := parseLogLine(sc.Bytes())
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		calls = append(calls, c)
	}
	return calls, sc.Err()
}

func parseLogLine(line []byte) (Call, error) {
	var c Call
	dec := json.NewDecoder(bytes.NewReader(line))
	if err := dec.Decode(&c.Args); err != nil {
		return c, fmt.Errorf("decoding argv: %w", err)
	}
	rest := bytes.TrimSpace(line[dec.InputOffset():])
	if len(rest) == 0 {
		return c, nil
	}
	enc, ok := bytes.CutPrefix(rest, []byte("<"))
	if !ok {
		return c, fmt.Errorf("unexpected %q after argv", rest)
	}
	stdin, err := base64.StdEncoding.DecodeString(string(enc))
	if err != nil {
		return c, fmt.Errorf("decoding stdin: %w", err)
	}
	c.Stdin = stdin
	return c, nil
}
