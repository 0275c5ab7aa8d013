package netd

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/aboxhq/abox/internal/policy"
	"github.com/miekg/dns"
)

// selfTestName is the denied name the self-test asks for; it shows in the logs.
const selfTestName = policy.SelfTestName

// selfTest is what the supervisor checks before it reports ready: the ruleset netd loaded is
// the one expected and nothing else is in the namespace but Docker's DNS plumbing, and every
// listener refuses a denied name as the agent would meet it. No verified policy, no agent.
type selfTest struct {
	resolvers []string // must answer NXDOMAIN for a denied name; include one reached via the redirect
	addrs     listenAddrs
	nft       nftRunner
	expected  []byte // policy.ExpectedRuleset()
}

// run performs every check and reports all failures.
func (st selfTest) run(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var errs []error
	if st.nft != nil {
		errs = append(errs, st.checkRuleset(ctx))
	}
	for _, r := range st.resolvers {
		errs = append(errs, checkResolverDenies(ctx, r))
	}
	errs = append(errs,
		checkTLSDenies(ctx, st.addrs.sni),
		checkHTTPDenies(ctx, st.addrs.http),
		checkAccepts(ctx, st.addrs.mcp))
	return errors.Join(errs...)
}

func (st selfTest) checkRuleset(ctx context.Context) error {
	live, err := st.nft.run(ctx, nil, "-j", "list", "ruleset")
	if err != nil {
		return err
	}
	if err := policy.CompareRuleset(st.expected, live); err != nil {
		return fmt.Errorf("loaded ruleset: %w", err)
	}
	return nil
}

func checkResolverDenies(ctx context.Context, addr string) error {
	q := new(dns.Msg)
	q.SetQuestion(selfTestName+".", dns.TypeA)
	in, _, err := (&dns.Client{Timeout: 3 * time.Second}).ExchangeContext(ctx, q, addr)
	if err != nil {
		return fmt.Errorf("resolver %s: %w", addr, err)
	}
	if in.Rcode != dns.RcodeNameError {
		return fmt.Errorf("resolver %s answered %s for a denied name, want NXDOMAIN", addr, dns.RcodeToString[in.Rcode])
	}
	return nil
}

// checkTLSDenies expects the TLS proxy to accept a connection and refuse a denied server name.
func checkTLSDenies(ctx context.Context, addr string) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("tls proxy %s: %w", addr, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	err = tls.Client(c, &tls.Config{ServerName: selfTestName, InsecureSkipVerify: true}).HandshakeContext(ctx)
	if err == nil {
		return fmt.Errorf("tls proxy %s completed a handshake for a denied name", addr)
	}
	return nil
}

// checkHTTPDenies expects the HTTP proxy to answer 403 for a denied host.
func checkHTTPDenies(ctx context.Context, addr string) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("http proxy %s: %w", addr, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", selfTestName)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return fmt.Errorf("http proxy %s: %w", addr, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		return fmt.Errorf("http proxy %s answered %s for a denied host, want 403", addr, resp.Status)
	}
	return nil
}

func checkAccepts(ctx context.Context, addr string) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("mcp forwarder %s: %w", addr, err)
	}
	return c.Close()
}
