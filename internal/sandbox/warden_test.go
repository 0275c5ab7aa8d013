package sandbox

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"

	"github.com/aboxhq/abox/internal/docker"
)

// goWarden runs each run's warden in the test's own process, over a pipe: closing the pipe
// without the done line is abox's death, as the warden sees it. Each warden's outcome, once it
// finished a run, is sent on finished (when not nil).
func goWarden(d *docker.Client, finished chan<- *Outcome) WardenFunc {
	return func(runDir string, _ []*os.File) (*Warden, error) {
		in, abox := io.Pipe()
		readyR, readyW := io.Pipe()
		exited := make(chan struct{})
		go func() {
			defer close(exited)
			out, _ := Ward(context.Background(), WardEnv{Docker: d, RunDir: runDir, In: in, Ready: readyW, Log: io.Discard})
			readyW.Close()
			if out != nil && finished != nil {
				finished <- out
			}
		}()
		line, err := bufio.NewReader(readyR).ReadString('\n')
		if line != wardenReady+"\n" {
			return nil, errors.Join(errors.New("the warden was not ready"), err)
		}
		go io.Copy(io.Discard, readyR)
		return NewWarden(abox, exited), nil
	}
}
