package netd

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"

	"github.com/aboxhq/abox/internal/policy"
)

// Main runs netd with the arguments that follow `abox netd` and returns the exit code. The CLI's
// hidden netd command must pass its arguments through unparsed.
//
// Without a mode it is the supervisor, started as root in the netd container:
//
//	abox netd [--dir /etc/abox] [--log-dir /var/log/abox] [--token-file /run/abox/gateway/token]
//	          [--upstream-dns 127.0.0.11:53] [--gateway-addr IP:PORT]
//
// --gateway-addr is the MCP gateway container's address on the sandbox's network, which abox
// reads from Docker for every run; the MCP forwarder dials exactly that and never resolves the
// gateway's name, which the agent could try to answer.
//
// It prints lifecycle events ([policy.Event]) as JSON lines on stdout, exactly one of them
// "ready", once the ruleset is loaded and verified and the self-test has passed; the agent may
// start only after it. SIGHUP reloads the policy and token; SIGTERM or SIGINT stops the serving
// child, which first closes the gateway sessions the agent left open, writes the counters and
// exits 0. Any failure, including the serving child's death, exits 1 (2 for bad
// flags).
//
// `abox netd serve` is the serving child, which the supervisor starts itself; it is not for
// direct use.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if runtime.GOOS != "linux" {
		fmt.Fprintln(stderr, "abox netd: error: netd runs only on Linux, inside the sandbox's netd container")
		return 1
	}
	if len(args) > 0 && args[0] == "serve" {
		return mainServe(ctx, args[1:], stderr)
	}
	return mainSupervisor(ctx, args, stdout, stderr)
}

func mainSupervisor(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("abox netd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.dir, "dir", policy.Dir, "directory holding "+policy.RulesFile+" and "+policy.File)
	fs.StringVar(&o.logDir, "log-dir", policy.LogDir, "directory for the decision logs and counters")
	fs.StringVar(&o.tokenFile, "token-file", policy.TokenFile, "the MCP gateway token (optional)")
	fs.StringVar(&o.credentialFile, "credential-file", policy.CredentialFile, "the Claude credential the model forwarder injects (optional)")
	fs.StringVar(&o.upstreamDNS, "upstream-dns", policy.UpstreamDNS, "resolver netd asks for allowed names")
	gateway := fs.String(policy.GatewayAddrFlag[2:], "", "the MCP gateway's IPv4 address and port (from Docker)")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		if err == nil {
			fmt.Fprintf(stderr, "abox netd: error: unexpected argument %q\n", fs.Arg(0))
		}
		return 2
	}
	var err error
	if o.gateway, err = parseGateway(*gateway); err != nil {
		fmt.Fprintf(stderr, "abox netd: error: %v\n", err)
		return 2
	}
	o.procSys, o.own, o.tlsQueue = "/proc/sys", ownAddrs, openTLSQueue
	nft := execNFT{path: nftPath}
	addrs := defaultAddrs()
	st := selfTest{
		resolvers: []string{addrs.dns, "127.0.0.1:53"}, // the second goes through the nat redirect
		addrs:     addrs, nft: nft,                     // expected: from the policy, when the supervisor loads it
	}
	s := newSupervisor(o, nft, execChild{upstreamDNS: o.upstreamDNS, stderr: stderr}, st, stdout)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	if err := s.run(ctx, sigs); err != nil {
		fmt.Fprintf(stderr, "abox netd: error: %v\n", err)
		return 1
	}
	return 0
}

// defaultAddrs are the loopback addresses of the policy's ports.
func defaultAddrs() listenAddrs {
	at := func(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }
	return listenAddrs{dns: at(policy.DNSPort), sni: at(policy.SNIPort), http: at(policy.HTTPPort), mcp: at(policy.MCPPort), model: at(policy.ModelPort)}
}

// Descriptors the supervisor hands the serving child (exec.Cmd.ExtraFiles start at 3).
const (
	fdControl = 3 + iota
	fdDNSLog
	fdConnLog
	fdMCPLog
	fdLogStats
	fdModelLog
)

func mainServe(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("abox netd serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	upstream := fs.String("upstream-dns", policy.UpstreamDNS, "resolver netd asks for allowed names")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	status, err := selfStatus()
	if err == nil {
		err = checkUnprivileged(status, os.Getuid())
	}
	if err != nil {
		fmt.Fprintf(stderr, "abox netd serve: error: %v\n", err)
		return 1
	}
	setMemoryLimit()
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	signal.Ignore(syscall.SIGHUP) // reloads come from the supervisor, over the control channel
	err = serve(ctx, serveOptions{
		addrs:       defaultAddrs(),
		upstreamDNS: *upstream,
		ctl:         os.NewFile(fdControl, "control"),
		dnsLog:      os.NewFile(fdDNSLog, policy.DNSLog),
		connLog:     os.NewFile(fdConnLog, policy.ConnLog),
		mcpLog:      os.NewFile(fdMCPLog, policy.MCPLog),
		logStats:    os.NewFile(fdLogStats, policy.LogStatsFile),
		modelLog:    os.NewFile(fdModelLog, policy.ModelLog),
	})
	if err != nil {
		fmt.Fprintf(stderr, "abox netd serve: error: %v\n", err)
		return 1
	}
	return 0
}
