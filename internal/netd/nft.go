package netd

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// nftPath is where the netd image has nft; it is run by absolute path with a clean environment.
const nftPath = "/usr/sbin/nft"

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
