package netd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/aboxhq/abox/internal/policy"
)

// options are the supervisor's settings, from its flags.
type options struct {
	dir       string // policy directory: policy.RulesFile and policy.File
	logDir    string
	tokenFile string
	// credentialFile holds the Claude credential in injected mode (a missing file: none).
	credentialFile string
	upstreamDNS    string
	gateway        netip.AddrPort // the MCP gateway's container address; zero: none
	procSys        string         // /proc/sys, where the namespace's settings are read; "": not checked
	// inProcChild: the serving child is this process (the hermetic tests'), whose privileges
	// are not the child's; the real supervisor always checks its child's.
	inProcChild bool
	own         func() ([]netip.Addr, error)
	// tlsQueue loads the queue rule ([policy.QueueRules], given as rules) and opens
	// [policy.TLSQueue]: the TLS fast path. nil, or an error, leaves the fast path off, and
	// every TLS connection goes through the SNI proxy.
	tlsQueue func(ctx context.Context, rules []byte) (tlsQueue, error)
}

// tlsQueue is the open [policy.TLSQueue]: the gate's packets, closed when netd stops.
type tlsQueue interface {
	packetQueue
	Close() error
}

// childStarter starts the serving child, handing it the other end of the control channel and
// the decision logs (dns, conn, mcp, then the logs' statistics, in that order). pid is the
// child's process id, whose privileges the supervisor checks. done receives the child's exit; kill is a
// last resort that needs CAP_KILL, which netd does not hold (root may not signal another uid
// without it): the child is stopped over the control channel, and dies with the supervisor.
type childStarter interface {
	start(ctl *os.File, logs []*os.File, uid int) (pid int, done <-chan error, kill func(), err error)
}

// supervisor is netd's root process: it holds the capabilities, never the network.
type supervisor struct {
	o        options
	nft      nftRunner
	starter  childStarter
	selfTest selfTest
	ev       *eventLog
	sets     *setManager

	// gate holds the agent's TLS flows to policy.SetTLS for their server-name check; nil when
	// the fast path is off, for fastOff's reason.
	gate    *tlsGate
	fastOff string
	answers *pendingAnswers // the child's answers to the gate's questions

	mu         sync.Mutex
	uid        int // of the serving child, from the first policy; a reload may not change it
	policy     []byte
	token      string
	credential string       // the Claude credential, injected by the model forwarder
	resolvers  []netip.Addr // the policy's resolvers, opened on port 53 in netd's set
}

func newSupervisor(o options, nft nftRunner, starter childStarter, st selfTest, stdout io.Writer) *supervisor {
	return &supervisor{
		o: o, nft: nft, starter: starter, selfTest: st,
		ev:   &eventLog{stdout: stdout, now: time.Now},
		sets: newSetManager(nft), answers: newPendingAnswers(),
	}
}

// run sets up the sandbox's network, starts the child and serves until a stop signal, ctx's end,
// or the child's death, which is an error: without the child the agent is offline.
// The outcome is also the last event: stop, or error.
func (s *supervisor) run(ctx context.Context, sigs <-chan os.Signal) error {
	files, err := s.openLogs()
	if err != nil {
		s.ev.emit(policy.EventError, err.Error())
		return err
	}
	defer closeAll(files)
	defer s.ev.setFile(nil)
	s.ev.emit(policy.EventStart, "")
	if err := s.serve(ctx, sigs, files[1:]); err != nil {
		s.ev.emit(policy.EventError, err.Error())
		return err
	}
	s.ev.emit(policy.EventStop, "")
	return nil
}

// serve loads the policy, starts and verifies the child, reports ready and serves signals.
func (s *supervisor) serve(ctx context.Context, sigs <-chan os.Signal, logs []*os.File) error {
	if err := s.loadPolicy(); err != nil {
		return err
	}
	if _, err := s.nft.run(ctx, nil, "-f", s.path(policy.RulesFile)); err != nil {
		return fmt.Errorf("loading the ruleset: %w", err)
	}
	q := s.openTLSQueue(ctx)
	if q != nil {
		defer q.Close() // the kernel drops what is still held
	}
	if err := s.guardNamespace(ctx); err != nil {
		return err
	}
	if err := s.openResolvers(ctx); err != nil {
		return err
	}
	if err := s.loadToken(); err != nil {
		return err
	}
	ch, err := s.startChild(logs)
	if err != nil {
		return err
	}
	if err := s.awaitListening(ctx, ch); err != nil {
		s.stopChild(ch)
		return err
	}
	if q != nil {
		s.gate = newTLSGate(q, s.askChild(ch))
		s.gate.report = func(msg string) { s.ev.emit(policy.EventError, msg) }
		s.gate.refused = func(k flowKey, why string) { ch.ctl.send(message{Op: opTLSRefused, Flow: k.String(), Detail: why}) }
		go s.gate.serve(ctx)
	}
	if err := s.selfTest.run(ctx); err != nil {
		s.stopChild(ch)
		return fmt.Errorf("self-test: %w", err)
	}
	s.ev.emit(policy.EventReady, s.readyDetail())
	return s.loop(ctx, sigs, ch)
}

func (s *supervisor) path(name string) string { return filepath.Join(s.o.dir, name) }

// servingUID is the uid the child runs as, which the loaded ruleset names.
func (s *supervisor) servingUID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.uid
}

// runningChild is the supervisor's view of the serving child.
type runningChild struct {
	ctl       *ctlConn
	kill      func()
	done      <-chan error
	listening chan struct{}
	ctlDone   chan error
}

// startChild starts the serving child with a fresh control channel, checks that the kernel
// holds it unprivileged, and only then sends it the policy and the token. A refused child loses
// its channel and dies with the supervisor, which exits (Pdeathsig).
func (s *supervisor) startChild(logs []*os.File) (*runningChild, error) {
	mine, theirs, err := socketPair()
	if err != nil {
		return nil, err
	}
	uid := s.servingUID()
	pid, done, kill, err := s.starter.start(theirs, logs, uid)
	theirs.Close()
	if err != nil {
		mine.Close()
		return nil, fmt.Errorf("starting the serving child: %w", err)
	}
	if !s.o.inProcChild {
		if err := checkChild("/proc", pid, uid); err != nil {
			mine.Close()
			kill()
			return nil, err
		}
	}
	rc := &runningChild{ctl: newCtlConn(mine), kill: kill, done: done,
		listening: make(chan struct{}), ctlDone: make(chan error, 1)}
	go s.serveControl(rc)
	if err := s.sendConfig(rc); err != nil {
		rc.ctl.close() // the child exits when it loses the channel
		kill()
		return nil, err
	}
	return rc, nil
}

// awaitListening waits for the child to report its listeners up.
func (s *supervisor) awaitListening(ctx context.Context, rc *runningChild) error {
	select {
	case <-rc.listening:
		return nil
	case err := <-rc.done:
		return fmt.Errorf("serving child exited before listening: %v", err)
	case err := <-rc.ctlDone:
		return fmt.Errorf("serving child: %w", err)
	case <-time.After(startTimeout):
		return errors.New("serving child did not start listening within 15 s")
	case <-ctx.Done():
		return ctx.Err()
	}
}

// startTimeout bounds the child's start.
const startTimeout = 15 * time.Second

// loop serves signals until a stop, or a finish ([policy.FinishSignal]) and then a stop.
func (s *supervisor) loop(ctx context.Context, sigs <-chan os.Signal, rc *runningChild) error {
	for {
		select {
		case sig := <-sigs:
			switch sig {
			case syscall.SIGHUP:
				s.reload(rc)
				continue
			case syscall.SIGUSR1:
				s.shutdown(rc)
				s.ev.emit(policy.EventFinished, "")
				s.idle(ctx, sigs)
				return nil
			}
			s.shutdown(rc)
			return nil
		case <-ctx.Done():
			s.shutdown(rc)
			return nil
		case err := <-rc.done:
			return fmt.Errorf("serving child exited: %v", err)
		case err := <-rc.ctlDone:
			return s.childGone(rc, err)
		}
	}
}

// idle waits, after a finish, for the stop signal or ctx's end. Nothing serves any more: the
// child is gone, and the counters are written. Further finish and reload signals are ignored.
func (s *supervisor) idle(ctx context.Context, sigs <-chan os.Signal) {
	for {
		select {
		case sig := <-sigs:
			if sig != syscall.SIGHUP && sig != syscall.SIGUSR1 {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// childGone reports the end of the control channel: usually the child died, and its exit
// status says more than the channel's EOF.
func (s *supervisor) childGone(rc *runningChild, ctlErr error) error {
	select {
	case err := <-rc.done:
		return fmt.Errorf("serving child exited: %v", err)
	case <-time.After(time.Second):
		s.stopChild(rc)
		return fmt.Errorf("serving child: %w", ctlErr)
	}
}

// serveControl answers the child's messages until the channel fails; every request is
// validated against the current policy before nft sees it.
func (s *supervisor) serveControl(rc *runningChild) {
	listening := false
	for {
		m, err := rc.ctl.recv()
		if err != nil {
			rc.ctlDone <- fmt.Errorf("control channel: %w", err)
			return
		}
		switch {
		case m.Op == opAdd:
			rc.ctl.send(message{Op: opResult, ID: m.ID, Error: errText(s.addElements(m.Set))})
		case m.Op == opListening && !listening:
			listening = true
			close(rc.listening)
		case m.Op == opTLSVerdict:
			s.answers.resolve(m)
		case m.Op == opEvent:
			if event, detail, ok := childEvent(m); ok {
				s.ev.emit(event, detail)
			}
		default:
			s.ev.emit(policy.EventError, fmt.Sprintf("unexpected control message %q from the child", m.Op))
		}
	}
}

// addElements validates and applies one request of the child.
func (s *supervisor) addElements(req *setRequest) error {
	if req == nil {
		return errors.New("no set request")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := s.sets.add(ctx, *req)
	if errors.Is(err, errRefused) {
		s.ev.emit(policy.EventError, "set request "+err.Error())
	}
	return err
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// sendConfig sends the current policy and token to the child.
func (s *supervisor) sendConfig(rc *runningChild) error {
	return rc.ctl.send(s.configMessage())
}

// configMessage is the child's configuration: the policy, the token and the gateway's address.
func (s *supervisor) configMessage() message {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := message{Op: opConfig, Policy: s.policy, Token: s.token, Credential: s.credential, TLSFast: s.fastOff == "" && s.o.tlsQueue != nil}
	if s.o.gateway.IsValid() {
		m.Gateway = s.o.gateway.String()
	}
	return m
}

// reload re-reads the token and the policy (keeping the current one if the new one is invalid)
// and sends both to the child.
func (s *supervisor) reload(rc *runningChild) {
	if err := s.loadPolicy(); err != nil {
		s.ev.emit(policy.EventError, "reload: keeping the current policy: "+err.Error())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.openResolvers(ctx); err != nil {
		s.ev.emit(policy.EventError, "reload: "+err.Error())
	}
	if err := s.loadToken(); err != nil {
		s.ev.emit(policy.EventError, "reload: keeping the current token: "+err.Error())
	}
	if err := s.sendConfig(rc); err != nil {
		s.ev.emit(policy.EventError, "reload: "+err.Error())
		return
	}
	if s.gate != nil {
		if err := s.sets.revokeFlows(ctx, s.gate.revoked(func(name string) bool { return s.sets.allows(name, 443) })); err != nil {
			s.ev.emit(policy.EventError, "reload: "+err.Error())
		}
	}
	s.ev.emit(policy.EventReload, s.readyDetail())
}

// guardNamespace checks the shared namespace's port setting, reserves the addresses no name may
// open (the namespace's own, the gateway's), and opens the gateway's address for netd's uid: the
// MCP forwarder dials it and nothing else, and nothing the agent can answer is ever asked where
// the gateway is.
func (s *supervisor) guardNamespace(ctx context.Context) error {
	if s.o.procSys != "" {
		if err := checkNamespace(s.o.procSys); err != nil {
			return err
		}
	}
	var own []netip.Addr
	if s.o.own != nil {
		var err error
		if own, err = s.o.own(); err != nil {
			return err
		}
	}
	s.sets.setReserved(reservedAddrs(own, s.o.gateway))
	if !s.o.gateway.IsValid() {
		return nil
	}
	if err := s.sets.openFixed(ctx, policy.SetNetd, []netip.Addr{s.o.gateway.Addr()}, int(s.o.gateway.Port())); err != nil {
		return fmt.Errorf("opening the gateway's address: %w", err)
	}
	return nil
}

// openResolvers lets netd's uid reach the policy's resolvers on port 53, UDP and TCP, for the
// names Docker's resolver cannot answer. Nothing else may send DNS out of the namespace.
func (s *supervisor) openResolvers(ctx context.Context) error {
	s.mu.Lock()
	addrs := s.resolvers
	s.mu.Unlock()
	if len(addrs) == 0 {
		return nil
	}
	if err := s.sets.openFixed(ctx, policy.SetNetd, addrs, 53); err != nil {
		return fmt.Errorf("opening the host's resolvers: %w", err)
	}
	return nil
}

// shutdown stops the child, which first closes the agent's gateway sessions, then writes the
// counters, so that they count that traffic too. abox gives `docker stop` 5 s before it kills
// netd, and both steps fit in it: the child has stopTimeout, then escalateTimeout, and the
// counters' deadline starts only when they do.
func (s *supervisor) shutdown(rc *runningChild) {
	s.stopChild(rc)
	ctx, cancel := context.WithTimeout(context.Background(), countersTimeout)
	defer cancel()
	if err := s.writeCounters(ctx); err != nil {
		s.ev.emit(policy.EventError, "counters: "+err.Error())
	}
}

// stopChild asks the child to stop over the control channel and waits stopTimeout, keeping the
// channel open meanwhile (the child's last dials still need set requests answered); then it
// closes the channel (the child exits when it loses its supervisor), tries to kill it and waits
// escalateTimeout more. It then gives up: the supervisor's own exit kills the child (Pdeathsig).
func (s *supervisor) stopChild(rc *runningChild) {
	defer rc.ctl.close()
	rc.ctl.send(message{Op: opStop})
	steps := []struct {
		escalate func()
		wait     time.Duration
	}{{func() {}, stopTimeout}, {func() { rc.ctl.close(); rc.kill() }, escalateTimeout}}
	for _, step := range steps {
		step.escalate()
		select {
		case <-rc.done:
			return
		case <-time.After(step.wait):
		}
	}
	s.ev.emit(policy.EventError, "the serving child did not stop")
}

// Deadlines of the shutdown, each from the start of its step.
const (
	// stopTimeout is how long the child gets to stop: it closes the gateway sessions within
	// mcpCloseTimeout, then exits.
	stopTimeout     = mcpCloseTimeout + time.Second
	escalateTimeout = 500 * time.Millisecond
	// countersTimeout bounds reading the counters with nft, which takes milliseconds.
	countersTimeout = time.Second
)

// readyDetail summarises what netd enforces, for the ready and reload events.
func (s *supervisor) readyDetail() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := policy.Parse(s.policy)
	if err != nil {
		return ""
	}
	mcp := "off"
	if p.MCP != nil {
		mcp = fmt.Sprintf("%d tools", len(p.MCP.Tools))
		if s.token == "" {
			mcp += ", no gateway token"
		}
	}
	tls := "tls fast path on"
	if s.fastOff != "" {
		tls = "tls fast path off: " + s.fastOff
	}
	return fmt.Sprintf("%d egress entries; mcp %s; %s", len(p.Egress), mcp, tls)
}
