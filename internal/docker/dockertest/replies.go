package dockertest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// replyBlock is one "> PREFIX" block of a replies file; see the package doc for the format.
type replyBlock struct {
	line     int // line number of the "> " line: the block's identity in REPLIES.used
	prefix   string
	stdout   bytes.Buffer
	stderr   bytes.Buffer
	exitCode int
	sleep    time.Duration
	once     bool
}

// parseReplies parses a replies file. Paths in *-file directives are read relative to dir.
func parseReplies(data []byte, name, dir string) ([]*replyBlock, error) {
	var blocks []*replyBlock
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), "\r")
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "" || strings.HasPrefix(trimmed, "#"):
			continue
		case trimmed == ">" || strings.HasPrefix(line, "> "):
			prefix := strings.TrimSpace(strings.TrimPrefix(trimmed, ">"))
			blocks = append(blocks, &replyBlock{line: n, prefix: prefix})
		case len(blocks) == 0:
			return nil, fmt.Errorf("%s:%d: directive before the first \"> PREFIX\" line", name, n)
		default:
			if err := blocks[len(blocks)-1].directive(line, dir); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", name, n, err)
			}
		}
	}
	return blocks, sc.Err()
}

// directive applies one directive line to the block.
func (b *replyBlock) directive(line, dir string) error {
	word, rest, hasColon := strings.Cut(line, ":")
	if hasColon {
		rest = strings.TrimPrefix(rest, " ")
		switch word {
		case "stdout":
			b.stdout.WriteString(rest + "\n")
			return nil
		case "stderr":
			b.stderr.WriteString(rest + "\n")
			return nil
		case "stdout-file":
			return appendFile(&b.stdout, dir, rest)
		case "stderr-file":
			return appendFile(&b.stderr, dir, rest)
		}
	}
	return b.wordDirective(strings.Fields(line))
}

func (b *replyBlock) wordDirective(f []string) error {
	var err error
	switch {
	case len(f) == 1 && f[0] == "once":
		b.once = true
	case len(f) == 2 && f[0] == "exit":
		b.exitCode, err = strconv.Atoi(f[1])
	case len(f) == 2 && f[0] == "sleep":
		b.sleep, err = time.ParseDuration(f[1])
	default:
		return fmt.Errorf("unknown directive %q", strings.Join(f, " "))
	}
	return err
}

func appendFile(buf *bytes.Buffer, dir, name string) error {
	if !filepath.IsAbs(name) {
		name = filepath.Join(dir, name)
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	buf.Write(data)
	return nil
}

// pick returns the first block matching args that is still usable, given the lines of the once
// blocks already used.
func pick(blocks []*replyBlock, args []string, used map[int]bool) *replyBlock {
	for _, b := range blocks {
		if b.once && used[b.line] {
			continue
		}
		if Matches(b.prefix, args) {
			return b
		}
	}
	return nil
}
