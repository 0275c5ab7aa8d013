package netd

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// The control channel is a socketpair between the supervisor and the serving child, carrying one
// JSON [message] a line. The child is network-facing, so the supervisor treats everything it
// reads there as hostile input: it caps line length, validates every request and never lets the
// child speak on stdout.

// Operations of [message].
const (
	// opConfig (supervisor → child): the policy to enforce and the gateway token. Sent at start
	// and after every SIGHUP.
	opConfig = "config"
	// opAdd (child → supervisor): add Set's elements; answered by opResult with the same ID.
	opAdd = "add"
	// opResult (supervisor → child): the outcome of the request ID; Error is "" on success.
	opResult = "result"
	// opListening (child → supervisor): every listener is up.
	opListening = "listening"
	// opEvent (child → supervisor): a lifecycle event for netd.jsonl (only reload and error).
	opEvent = "event"
	// opStop (supervisor → child): stop serving and exit.
	opStop = "stop"
	// opTLSCheck (supervisor → child): decide on the ClientHello Hello of the agent's TLS flow
	// Flow, held in the kernel ("The TLS fast path"); answered by opTLSVerdict with the same ID.
	opTLSCheck = "tls-check"
	// opTLSVerdict (child → supervisor): Error is "" when the flow may run, with Name the
	// canonical server name it was allowed for; else why it was refused.
	opTLSVerdict = "tls-verdict"
	// opTLSRefused (supervisor → child): the gate refused the held flow Flow itself, for the
	// reason Detail; the child logs it with its own decisions.
	opTLSRefused = "tls-refused"
)

// maxControlLine bounds one control message; a policy of a few thousand entries fits.
const maxControlLine = 4 << 20

// message is one line on the control channel. Only the fields of its Op are set.
type message struct {
	Op     string          `json:"op"`
	ID     uint64          `json:"id,omitempty"`
	Set    *setRequest     `json:"set,omitempty"`
	Policy json.RawMessage `json:"policy,omitempty"`
	Token  string          `json:"token,omitempty"` // never logged
	// Credential (opConfig) is the Claude credential the model forwarder injects; never logged.
	Credential string `json:"credential,omitempty"`
	// Gateway (opConfig) is the MCP gateway's address and port, the only peer the MCP forwarder
	// dials and sends the token to; "" when the run has none.
	Gateway string `json:"gateway,omitempty"`
	// TLSFast (opConfig) says the supervisor holds the TLS queue: the child then opens the
	// addresses it answers for names allowed on 443 in policy.SetTLS.
	TLSFast bool `json:"tls_fast,omitempty"`
	// Flow (opTLSCheck) is the held flow, "agent-addr:port server-addr:port"; Hello its first
	// bytes, a whole ClientHello; Name (opTLSVerdict) the server name it was allowed for.
	Flow   string `json:"flow,omitempty"`
	Hello  []byte `json:"hello,omitempty"`
	Name   string `json:"name,omitempty"`
	Event  string `json:"event,omitempty"`
	Detail string `json:"detail,omitempty"`
	Error  string `json:"error,omitempty"`
}

// ctlConn reads and writes messages on one end of the control channel. send is safe for
// concurrent use; recv must be called from one goroutine.
type ctlConn struct {
	r  *bufio.Reader
	mu sync.Mutex
	w  io.Writer
	c  io.Closer
}

func newCtlConn(rwc io.ReadWriteCloser) *ctlConn {
	return &ctlConn{r: bufio.NewReaderSize(rwc, 64<<10), w: rwc, c: rwc}
}

func (c *ctlConn) send(m message) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encoding control message: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("writing control message: %w", err)
	}
	return nil
}

// errLineTooLong is returned by [readLine] for a line over its limit.
var errLineTooLong = errors.New("line too long")

// readLine reads up to and including the next newline, or to the end of r, refusing a line longer
// than limit without buffering it whole.
func readLine(br *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > limit {
			return nil, errLineTooLong
		}
		if err != bufio.ErrBufferFull {
			return line, err
		}
	}
}

func (c *ctlConn) recv() (message, error) {
	line, err := readLine(c.r, maxControlLine)
	if err == io.EOF && len(line) > 0 {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return message{}, err
	}
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		return message{}, fmt.Errorf("decoding control message: %w", err)
	}
	return m, nil
}

func (c *ctlConn) close() error { return c.c.Close() }
