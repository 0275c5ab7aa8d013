package netd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/aboxhq/abox/internal/policy"
)

// The supervisor's files: the policy it reads, the gateway token, the logs it opens for the
// child and the counters it writes at the end.

// openLogs creates the log directory and opens, for appending, netd.jsonl (the supervisor's
// events) and the child's decision logs (dns, conn, mcp), and, emptied, the file the child
// rewrites with the logs' statistics. The child gets open descriptors rather than the
// directory, so it needs no write access there and cannot touch the other files.
func (s *supervisor) openLogs() ([]*os.File, error) {
	if err := os.MkdirAll(s.o.logDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the log directory: %w", err)
	}
	var files []*os.File
	for _, name := range []string{policy.EventLog, policy.DNSLog, policy.ConnLog, policy.MCPLog, policy.LogStatsFile, policy.ModelLog} {
		mode := os.O_WRONLY | os.O_APPEND | os.O_CREATE
		if name == policy.LogStatsFile {
			mode = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
		}
		f, err := os.OpenFile(filepath.Join(s.o.logDir, name), mode, 0o644)
		if err != nil {
			closeAll(files)
			return nil, fmt.Errorf("opening log: %w", err)
		}
		files = append(files, f)
	}
	s.ev.setFile(files[0])
	return files, nil
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// loadPolicy reads and validates the netd policy, and hands the set manager the rules derived
// from it, which revokes what a narrower policy no longer allows. On error the current policy
// stays. A failure to revoke is reported as an event: the new policy is in force all the same.
func (s *supervisor) loadPolicy() error {
	raw, err := os.ReadFile(s.path(policy.File))
	if err != nil {
		return fmt.Errorf("reading the netd policy: %w", err)
	}
	p, err := policy.Parse(raw)
	if err != nil {
		return err
	}
	rules, err := rulesFromPolicy(p)
	if err != nil {
		return fmt.Errorf("netd policy: %w", err)
	}
	resolvers, _ := p.ResolverAddrs() // validated by policy.Parse
	s.mu.Lock()
	if s.uid != 0 && s.uid != p.ServingUID() {
		s.mu.Unlock()
		return fmt.Errorf("netd policy: netd_uid %d differs from the running child's %d; start a new sandbox", p.ServingUID(), s.uid)
	}
	s.uid = p.ServingUID()
	s.selfTest.expected = policy.ExpectedRuleset(s.uid)
	s.policy = raw
	s.resolvers = s.resolvers[:0]
	for _, r := range resolvers {
		s.resolvers = append(s.resolvers, r.Addr())
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.sets.setRules(ctx, rules); err != nil {
		s.ev.emit(policy.EventError, err.Error())
	}
	return nil
}

// loadToken reads the gateway token. A missing file means no token (the MCP forwarder then
// answers 503); an unreadable or malformed one is an error and the current token stays. The
// token never appears in an error or a log.
func (s *supervisor) loadToken() error {
	tok, err := readSecret(s.o.tokenFile, "gateway token")
	if err != nil {
		return err
	}
	cred := ""
	if s.o.credentialFile != "" {
		if cred, err = readSecret(s.o.credentialFile, "Claude credential"); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.token, s.credential = tok, cred
	return nil
}

// maxTokenLen bounds the token and credential files.
const maxTokenLen = 4096

// readSecret reads a one-line secret file, the gateway token or the Claude credential; a
// missing file is no secret ("").
func readSecret(path, what string) (string, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the %s: %w", what, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxTokenLen+1))
	if err != nil {
		return "", fmt.Errorf("reading the %s: %w", what, err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" || len(tok) > maxTokenLen || strings.IndexFunc(tok, func(r rune) bool { return r <= ' ' || r > '~' }) >= 0 {
		return "", fmt.Errorf("%s in %s is not one line of printable ASCII", what, path)
	}
	return tok, nil
}

// writeCounters reads the ruleset's counters and writes them to counters.json atomically.
func (s *supervisor) writeCounters(ctx context.Context) error {
	out, err := s.nft.run(ctx, nil, "-j", "list", "table", "inet", policy.Table)
	if err != nil {
		return err
	}
	c, err := policy.ParseCounters(out)
	if err != nil {
		return err
	}
	c.TS = policy.Timestamp(time.Now())
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(filepath.Join(s.o.logDir, policy.CountersLog), append(b, '\n'))
}

// writeAtomic writes a file through a temporary file and a rename.
func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// socketPair returns both ends of a new Unix stream socket pair, close-on-exec.
func socketPair() (*os.File, *os.File, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the control channel: %w", err)
	}
	syscall.CloseOnExec(fds[0])
	syscall.CloseOnExec(fds[1])
	return os.NewFile(uintptr(fds[0]), "netd-control"), os.NewFile(uintptr(fds[1]), "netd-control-child"), nil
}
