package netd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/aboxhq/abox/internal/netd/nfq"
	"github.com/aboxhq/abox/internal/policy"
)

// nftPath is where the netd image has nft; it is run by absolute path with a clean environment.
const nftPath = "/usr/sbin/nft"

// restorePath is where the netd image has iptables-nft-restore, which loads the queue rule
// (policy.QueueRules): nft cannot make the NFQUEUE target some kernels have instead of nft's own
// queue statement.
const restorePath = "/usr/sbin/iptables-nft-restore"

// nftRunner runs one nft command. It is the supervisor's only way to the kernel's firewall, and
// the seam that lets tests run without root.
type nftRunner interface {
	run(ctx context.Context, stdin []byte, args ...string) ([]byte, error)
}

// execNFT runs the nft binary at path.
type execNFT struct{ path string }

func (n execNFT) run(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, n.path, args...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	cmd.Dir = "/"
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("nft %s: %w: %s", strings.Join(args, " "), err, firstLine(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// firstLine returns the first non-empty line of s, for an error message.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

// openTLSQueue loads rules (policy.QueueRules) with iptables-nft-restore and opens the TLS
// queue: the production [options.tlsQueue].
func openTLSQueue(ctx context.Context, rules []byte) (tlsQueue, error) {
	cmd := exec.CommandContext(ctx, restorePath)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	cmd.Dir = "/"
	cmd.Stdin = bytes.NewReader(rules)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("loading the queue rule: %w: %s", err, firstLine(stderr.String()))
	}
	q, err := nfq.Open(nfq.Config{Num: policy.TLSQueue, MaxLen: tlsQueueLen})
	if err != nil {
		return nil, fmt.Errorf("opening queue %d: %w", policy.TLSQueue, err)
	}
	ct, err := nfq.OpenConntrack()
	if err != nil {
		q.Close()
		return nil, fmt.Errorf("opening conntrack: %w", err)
	}
	return kernelQueue{q, ct}, nil
}

// kernelQueue is the TLS queue, with the conntrack socket the gate asks whether the flows it
// allowed are still open.
type kernelQueue struct {
	*nfq.Queue
	ct *nfq.Conntrack
}

func (k kernelQueue) FlowOpen(key flowKey) (bool, error) {
	mark, found, err := k.ct.Lookup(key.src, key.dst)
	if err != nil || !found {
		return false, err
	}
	const agent = policy.MarkAgentFlow
	return mark == agent|policy.MarkTLSAllowed || mark == agent|policy.MarkTLSPinned, nil
}

func (k kernelQueue) Close() error { return errors.Join(k.Queue.Close(), k.ct.Close()) }
