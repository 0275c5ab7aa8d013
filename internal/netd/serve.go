package netd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/aboxhq/abox/internal/policy"
)

// listenAddrs are where the serving child listens; production uses the policy ports on
// 127.0.0.1, tests use ephemeral ports.
type listenAddrs struct {
	dns, sni, http, mcp, model string
}

// serveOptions configure the serving child.
type serveOptions struct {
	addrs       listenAddrs
	upstreamDNS string
	ctl         io.ReadWriteCloser // the control channel to the supervisor
	dnsLog      io.Writer
	connLog     io.Writer
	mcpLog      io.Writer
	modelLog    io.Writer
	logStats    statsFile   // where policy.LogStatsFile is rewritten; nil for none
	modelTLS    *tls.Config // the model forwarder's; nil: the system roots
}

// child is the running serving child: its configuration and the listeners' shared parts.
type child struct {
	cur  current
	ctl  *ctlConn
	sets *ctlSets
	logs *logs
	sni  *sniProxy     // set by start; reconfigure closes its tunnels a new policy revokes
	web  *httpProxy    // set by start; reconfigure cuts its requests a new policy revokes
	mcp  *mcpForwarder // set by start; closes the agent's gateway sessions when serve ends
	// modelTLS is the model forwarder's TLS configuration: the system roots, or a test's.
	modelTLS *tls.Config
}

// serve runs the serving child until ctx ends, a listener fails or the supervisor asks it to
// stop or goes away. It starts listening only once it holds a valid configuration from the
// supervisor, and on the way out it closes the gateway sessions the agent left open.
func serve(ctx context.Context, o serveOptions) error {
	c := &child{ctl: newCtlConn(o.ctl), modelTLS: o.modelTLS}
	if c.modelTLS == nil {
		var err error
		if c.modelTLS, err = modelTLS(policy.ModelCADir); err != nil {
			return fmt.Errorf("model forwarder: %w", err)
		}
	}
	defer c.ctl.close()
	c.sets = newCtlSets(c.ctl)
	if err := c.firstConfig(); err != nil {
		return err
	}
	c.logs = newLogs(o, c.cur.get().logLimit)
	defer c.flushLogs(true)
	ls, err := listen(o.addrs)
	if err != nil {
		return err
	}
	defer ls.close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go c.logs.keep(ctx, flushInterval, c.reportLogError)
	errc := make(chan error, 8)
	res := newResolver(o.upstreamDNS)
	res.fallbacks = func() []string { return c.cur.get().resolvers }
	res.local = localNetworks()
	res.askFrom(policy.NetdSource)
	c.start(ls, res, errc)
	defer c.mcp.closeSessions(mcpCloseTimeout)
	if err := c.ctl.send(message{Op: opListening}); err != nil {
		return err
	}
	stop := make(chan struct{})
	go func() { errc <- c.control(stop) }()
	select {
	case <-ctx.Done():
		return nil
	case <-stop:
		return nil
	case err := <-errc:
		return err
	}
}

// newLogs opens the decision logs on the supervisor's descriptors, each capped at limit.
func newLogs(o serveOptions, limit int64) *logs {
	return &logs{dns: newJSONL(o.dnsLog, limit), conn: newJSONL(o.connLog, limit), mcp: newJSONL(o.mcpLog, limit),
		model: newJSONL(o.modelLog, limit), stats: o.logStats, now: time.Now}
}

// flushLogs writes the logs' aggregates and statistics, final at stop.
func (c *child) flushLogs(final bool) {
	if err := c.logs.flush(final); err != nil {
		c.reportLogError(err)
	}
}

// reportLogError reports a failure to write the logs' statistics as an event.
func (c *child) reportLogError(err error) {
	c.ctl.send(message{Op: opEvent, Event: policy.EventError, Detail: "writing " + policy.LogStatsFile + ": " + err.Error()})
}

// firstConfig waits for the supervisor's first configuration.
func (c *child) firstConfig() error {
	m, err := c.ctl.recv()
	if err != nil {
		return fmt.Errorf("waiting for the configuration: %w", err)
	}
	if m.Op != opConfig {
		return fmt.Errorf("first control message is %q, want %q", m.Op, opConfig)
	}
	cfg, err := newConfig(m.Policy, m.Token, m.Credential, m.Gateway)
	if err != nil {
		return err
	}
	cfg.tlsFast = m.TLSFast
	c.cur.set(cfg)
	return nil
}

// control handles the supervisor's messages until the channel closes. A stop closes stop and
// does not end the loop: closing the gateway sessions on the way out still dials, and each dial
// waits for the supervisor's answer to its set request.
func (c *child) control(stop chan<- struct{}) error {
	defer c.sets.shut()
	asked := false
	for {
		m, err := c.ctl.recv()
		if err != nil {
			return fmt.Errorf("control channel: %w", err)
		}
		switch m.Op {
		case opResult:
			c.sets.resolve(m)
		case opConfig:
			c.reconfigure(m)
		case opTLSCheck:
			go c.checkTLS(m)
		case opTLSRefused:
			c.sni.log.write(heldRefusal(m.Flow, m.Detail, c.sni.now()))
		case opStop:
			if !asked {
				asked = true
				close(stop)
			}
		}
	}
}

// reconfigure applies a new configuration, or keeps the current one if it is invalid.
func (c *child) reconfigure(m message) {
	cfg, err := newConfig(m.Policy, m.Token, m.Credential, m.Gateway)
	if err != nil {
		c.ctl.send(message{Op: opEvent, Event: policy.EventError, Detail: "reload refused, keeping the current policy: " + err.Error()})
		return
	}
	cfg.tlsFast = m.TLSFast
	c.cur.set(cfg)
	if c.sni != nil {
		c.sni.revoke()
	}
	if c.web != nil {
		c.web.revoke()
	}
}

// listeners are the child's sockets, all on loopback.
type listeners struct {
	dnsUDP                        net.PacketConn
	dnsTCP, sni, http, mcp, model net.Listener
}

func listen(a listenAddrs) (*listeners, error) {
	ls := &listeners{}
	var err error
	if ls.dnsUDP, err = net.ListenPacket("udp4", a.dns); err != nil {
		return nil, fmt.Errorf("listening: %w", err)
	}
	for _, l := range []struct {
		dst  *net.Listener
		addr string
	}{{&ls.dnsTCP, a.dns}, {&ls.sni, a.sni}, {&ls.http, a.http}, {&ls.mcp, a.mcp}, {&ls.model, a.model}} {
		if *l.dst, err = net.Listen("tcp4", l.addr); err != nil {
			ls.close()
			return nil, fmt.Errorf("listening: %w", err)
		}
	}
	return ls, nil
}

func (ls *listeners) close() {
	for _, c := range []io.Closer{ls.dnsUDP, ls.dnsTCP, ls.sni, ls.http, ls.mcp, ls.model} {
		if c != nil {
			c.Close()
		}
	}
}

// start runs every service on its listener; each reports to errc when it stops.
func (c *child) start(ls *listeners, res *resolver, errc chan<- error) {
	own, _ := ownAddrs() // the supervisor refuses them too; this spares a request it would refuse
	allowed := destinationCheck(&c.cur, own)
	dial := &upstreamDialer{res: res, sets: c.sets, timeout: dialTimeout, allowed: allowed}
	h := &dnsHandler{cfg: &c.cur, res: res, sets: c.sets, log: c.logs.dns, now: time.Now, allowed: allowed,
		lookups: make(chan struct{}, maxDNSLookups)}
	udp, tcp := dnsServers(h, ls.dnsUDP, bound(ls.dnsTCP, maxDNSTCPConns, c.logs.conn, policy.KindDNS, policy.DNSPort))
	sni := &sniProxy{cfg: &c.cur, dial: dial, log: c.logs.conn, port: 443, helloTimeout: helloTimeout,
		slots: make(chan struct{}, maxProxyConns), now: time.Now}
	c.sni = sni
	c.web = newHTTPProxy(&c.cur, dial, c.logs.conn, 80)
	web := newHTTPServer(c.web)
	web.ConnContext = withOrigDst
	c.mcp = newMCPForwarder(&c.cur, c.logs.mcp)
	mcp := newHTTPServer(c.mcp)
	modelDial := &upstreamDialer{res: res, sets: c.sets, timeout: dialTimeout, allowed: modelDestinationCheck(&c.cur, own)}
	model := newHTTPServer(newModelForwarder(&c.cur, modelDial.dial, c.modelTLS, c.logs.model))
	run := func(name string, f func() error) {
		go func() { errc <- fmt.Errorf("%s stopped: %w", name, stopped(f())) }()
	}
	run("dns (udp)", udp.ActivateAndServe)
	run("dns (tcp)", tcp.ActivateAndServe)
	run("tls proxy", func() error { return sni.serve(ls.sni) })
	run("http proxy", func() error {
		return web.Serve(bound(ls.http, maxHTTPConns, c.logs.conn, policy.KindHTTP, policy.HTTPPort))
	})
	run("mcp forwarder", func() error {
		return mcp.Serve(bound(ls.mcp, maxMCPConns, c.logs.conn, policy.KindMCP, policy.MCPPort))
	})
	run("model forwarder", func() error {
		return model.Serve(bound(ls.model, maxModelConns, c.logs.conn, policy.KindModel, policy.ModelPort))
	})
}

// stopped turns the nil error of a server that should have run forever into one.
func stopped(err error) error {
	if err == nil || errors.Is(err, http.ErrServerClosed) {
		return errors.New("listener closed")
	}
	return err
}

// selfStatus reads /proc/self/status.
func selfStatus() (string, error) {
	b, err := os.ReadFile("/proc/self/status")
	return string(b), err
}
