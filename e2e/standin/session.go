//go:build e2e

package main

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// claudeDir is where Claude Code keeps its state: $CLAUDE_CONFIG_DIR, else ~/.claude.
func claudeDir() string {
	if d := os.Getenv("CLAUDE_CONFIG_DIR"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = "/"
	}
	return filepath.Join(home, ".claude")
}

var nonAlnum = regexp.MustCompile(`[^A-Za-z0-9]`)

// projectDir is the real CLI's per-directory session folder: the working directory with every
// character other than a letter or digit replaced by '-'.
func projectDir(cwd string) string {
	return filepath.Join(claudeDir(), "projects", nonAlnum.ReplaceAllString(cwd, "-"))
}

// session is one conversation file.
type session struct {
	ID   string
	Prev string // the session resumed, if any
	File string
}

// openSession picks the session for this run: a new one, the one --resume names, or the latest
// in this directory for --continue. Messages are the real CLI's.
func openSession(o options, cwd string) (session, error) {
	dir := projectDir(cwd)
	var s session
	switch {
	case o.resume != "":
		if _, err := os.Stat(filepath.Join(dir, o.resume+".jsonl")); err != nil {
			return s, cliError("No conversation found with session ID: %s", o.resume)
		}
		s.Prev = o.resume
	case o.cont:
		latest, err := latestSession(dir)
		if err != nil {
			return s, cliError("No conversation found to continue")
		}
		s.Prev = latest
	}
	switch {
	case o.sessionID != "":
		s.ID = o.sessionID
	case s.Prev != "" && !o.forkSession:
		s.ID = s.Prev
	default:
		s.ID = newUUID()
	}
	s.File = filepath.Join(dir, s.ID+".jsonl")
	return s, nil
}

// latestSession returns the id of the most recently written session in dir.
func latestSession(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	var best string
	var bestTime time.Time
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".jsonl") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		if best == "" || info.ModTime().After(bestTime) {
			best, bestTime = strings.TrimSuffix(e.Name(), ".jsonl"), info.ModTime()
		}
	}
	if best == "" {
		return "", fs.ErrNotExist
	}
	return best, nil
}

// record appends one line to the session file, in the shape of the real CLI's transcript lines.
func (s session) record(cwd, typ string, message any) error {
	if err := os.MkdirAll(filepath.Dir(s.File), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(s.File, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	return json.NewEncoder(f).Encode(map[string]any{
		"type":      typ,
		"sessionId": s.ID,
		"cwd":       cwd,
		"uuid":      newUUID(),
		"timestamp": time.Now().UTC().Format(time.RFC3339Nano),
		"message":   message,
	})
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// authenticated reports whether the real CLI would find credentials: the credentials file, or
// an API key or OAuth token in the environment.
func authenticated() bool {
	if os.Getenv("ANTHROPIC_API_KEY") != "" || os.Getenv("CLAUDE_CODE_OAUTH_TOKEN") != "" {
		return true
	}
	_, err := os.Stat(filepath.Join(claudeDir(), ".credentials.json"))
	return err == nil
}
