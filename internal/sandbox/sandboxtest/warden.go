// Package sandboxtest holds what tests of other packages need to run a sandbox without the abox
// binary: a warden in the test's own process.
package sandboxtest

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/sandbox"
)

// Warden runs each run's warden ([sandbox.Ward]) in the test's own process, over a pipe, with
// d as its docker. It dies with the test, so it is for tests only: a real run's warden must
// outlive abox ([sandbox.ProcessWarden]).
func Warden(d *docker.Client) sandbox.WardenFunc {
	return func(runDir string, _ []*os.File) (*sandbox.Warden, error) {
		in, abox := io.Pipe()
		readyR, readyW := io.Pipe()
		exited := make(chan struct{})
		go func() {
			defer close(exited)
			sandbox.Ward(context.Background(), sandbox.WardEnv{Docker: d, RunDir: runDir, In: in, Ready: readyW, Log: io.Discard})
			readyW.Close()
		}()
		line, err := bufio.NewReader(readyR).ReadString('\n')
		if line != "ready\n" {
			return nil, errors.Join(errors.New("the warden was not ready"), err)
		}
		go io.Copy(io.Discard, readyR)
		return sandbox.NewWarden(abox, exited), nil
	}
}
