package netd

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// maxSSEEvent bounds one server-sent event; a tools/list of a large profile fits easily.
const maxSSEEvent = 32 << 20

// copySSE copies an event stream from r to w one event at a time, flushing after each, so that
// nothing waits in netd (progress notifications must reach the agent while a tool runs). The data
// of each event goes through filter; an event it leaves alone is copied byte for byte, one it
// changes is written with its data on one line and its other fields kept.
func copySSE(w io.Writer, flush func() error, r io.Reader, filter func([]byte) []byte) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var event [][]byte
	size := 0
	for {
		line, err := readLine(br, maxSSEEvent-size)
		if err == errLineTooLong {
			return errors.New("server-sent event larger than 32 MiB")
		}
		if len(line) > 0 {
			event = append(event, line)
			size += len(line)
		}
		if len(event) > 0 && (isBlankLine(line) || err != nil) {
			if _, werr := w.Write(rewriteEvent(event, filter)); werr != nil {
				return werr
			}
			if ferr := flush(); ferr != nil {
				return ferr
			}
			event, size = event[:0], 0
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func isBlankLine(line []byte) bool {
	return len(line) > 0 && len(bytes.TrimRight(line, "\r\n")) == 0
}

// rewriteEvent returns the event's lines with its data passed through filter.
func rewriteEvent(lines [][]byte, filter func([]byte) []byte) []byte {
	var data [][]byte
	first := -1
	for i, l := range lines {
		if v, ok := bytes.CutPrefix(bytes.TrimRight(l, "\r\n"), []byte("data:")); ok {
			data = append(data, bytes.TrimPrefix(v, []byte(" ")))
			if first < 0 {
				first = i
			}
		}
	}
	joined := bytes.Join(data, []byte("\n"))
	if first < 0 {
		return bytes.Join(lines, nil)
	}
	out := filter(joined)
	if bytes.Equal(out, joined) {
		return bytes.Join(lines, nil)
	}
	var b bytes.Buffer
	for i, l := range lines {
		switch {
		case i == first:
			b.WriteString("data: ")
			b.Write(bytes.ReplaceAll(out, []byte("\n"), []byte("\ndata: ")))
			b.WriteByte('\n')
		case bytes.HasPrefix(l, []byte("data:")):
		default:
			b.Write(l)
		}
	}
	return b.Bytes()
}
