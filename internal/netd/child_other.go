//go:build !linux

package netd

import (
	"errors"
	"io"
	"os"
)

// execChild is Linux-only: netd runs in the netd container.
type execChild struct {
	upstreamDNS string
	stderr      io.Writer
}

func (execChild) start(*os.File, []*os.File, int) (int, <-chan error, func(), error) {
	return 0, nil, nil, errors.New("netd runs only on Linux")
}
