package gateway

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/docker/dockertest"
)

// TestRunningLog: the log of a running gateway comes back without its token and without the
// trailing newline; a gateway that is stopped or absent, or a daemon that does not answer,
// shows nothing and is no error; a container abox did not make is an error, and its log is not
// read.
func TestRunningLog(t *testing.T) {
	f := newFixture(t)
	write(t, filepath.Join(f.dir, TokenFile), testToken+"\n")
	daemonDown := docker.Result{ExitCode: 1, Stderr: []byte("Cannot connect to the Docker daemon at unix:///x.sock. Is the docker daemon running?\n")}
	stopped := okJSON(`{"Id":"c1","State":{"Status":"exited","Running":false},"Config":{"Labels":{"abox.managed":"true","abox.role":"gateway"}}}`)
	foreign := okJSON(`{"Id":"c1","State":{"Status":"running","Running":true},"Config":{"Labels":{}}}`)
	for _, tc := range []struct {
		name    string
		inspect docker.Result
		want    string
		err     bool
	}{
		{"running", running("x"), "auth «gateway-token»\nsecond", false},
		{"stopped", stopped, "", false},
		{"absent", notFound, "", false},
		{"daemon down", daemonDown, "", false},
		{"foreign", foreign, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := dockertest.New(t)
			fake.On("container inspect --format {{json .}} abox-gw-dev", tc.inspect)
			fake.On("logs --tail 7 abox-gw-dev", docker.Result{Stdout: []byte("auth " + testToken + "\nsecond\n\n")}).Optional()
			m := newManager(fake)
			m.GatewaysDir = f.gwDir
			got, err := m.RunningLog(context.Background(), "dev", f.dir, 7)
			if got != tc.want || (err != nil) != tc.err {
				t.Errorf("RunningLog = %q, %v; want %q (error %v)", got, err, tc.want, tc.err)
			}
			if !tc.err && tc.want == "" && strings.Contains(fake.ArgvText(), "logs") {
				t.Errorf("the log of a gateway that does not run was read:\n%s", fake.ArgvText())
			}
		})
	}
}
