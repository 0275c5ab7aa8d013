// Package dockertest provides two stand-ins for the docker CLI: [Fake], an in-process
// [docker.Runner] for unit tests, and [FakeBinary], a fake `docker` executable for testscript.
//
// Both answer by argv prefix from replies a test registers, record every argv so that a test can
// assert what abox ran, and keep stdin apart from argv so that a test can assert that no secret
// ever reached an argv. Neither needs a daemon.
//
// # Prefixes
//
// A prefix is the space-joined argv, without "docker", matched on whole arguments:
// "container inspect abox-gw" matches `docker container inspect abox-gw --format x` but not
// `docker container inspect abox-gw-dev`. The empty prefix matches every call. The first reply
// that matches, in registration (or file) order, answers.
//
// # Replies file
//
// [FakeBinary] reads its replies from the file named by $ABOX_FAKE_DOCKER. The file is a list of
// blocks; each starts with a line "> PREFIX" and is followed by directive lines:
//
//	# a comment; blank lines are ignored
//	> container inspect --format {{json .}} abox-gw-dev
//	stdout-file: gw.json
//	> network create
//	stdout: 0123abcd
//	once
//	> network create
//	stderr: Error response from daemon: network with name abox-net already exists
//	exit 1
//	>
//	stderr: Error response from daemon: No such container: x
//	exit 1
//
// A bare ">" has the empty prefix: put it last as the default reply. A call that matches no block
// exits 125 with "fake docker: no reply for …" on stderr. The directives are:
//
//	stdout: TEXT       append TEXT and a newline to stdout (one space after the colon is dropped)
//	stderr: TEXT       the same for stderr
//	stdout-file: PATH  append the file's contents to stdout; PATH is relative to the replies file
//	stderr-file: PATH  the same for stderr
//	exit N             exit with status N (default 0)
//	sleep DURATION     wait before answering (time.ParseDuration syntax)
//	once               answer one call only; later calls fall through to the next block. Uses
//	                   are recorded in the file REPLIES.used; delete it to reset them.
//
// The log format is described at [FakeBinary] and read back by [ReadLog].
package dockertest
