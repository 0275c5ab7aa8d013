package docker

import (
	"testing"
)

func TestFirstUsefulLine(t *testing.T) {
	tests := []struct{ name, stderr, want string }{
		{"empty", "", ""},
		{"daemon prefix", "Error response from daemon: No such container: x\n", "No such container: x"},
		{"blank lines first", "\n\n  \nError: No such object: x\n", "No such object: x"},
		{"legacy builder banner", "DEPRECATED: The legacy builder is deprecated and will be removed in a future release.\n" +
			"            BuildKit is currently disabled; enable it by removing the DOCKER_BUILDKIT=0\n" +
			"            environment-variable.\n\n" +
			"The command '/bin/sh -c exit 3' returned a non-zero code: 3\n",
			"The command '/bin/sh -c exit 3' returned a non-zero code: 3"},
		{"pull noise", "Unable to find image 'x:1' locally\ndocker: Error response from daemon: pull access denied\n\n" +
			"Run 'docker run --help' for more information\n", "pull access denied"},
		{"start names the container first", "Error response from daemon: No such container: nope\n" +
			"Error: failed to start containers: nope\n", "No such container: nope"},
		{"colour codes", "\x1b[91mboom\x1b[0m\n", "boom"},
		{"exit status echo", "exit status 1\n", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := firstUsefulLine([]byte(tc.stderr)); got != tc.want {
				t.Errorf("firstUsefulLine(%q) = %q, want %q", tc.stderr, got, tc.want)
			}
		})
	}
}

func TestFirstUsefulLineTruncates(t *testing.T) {
	long := make([]byte, 1000)
	for i := range long {
		long[i] = 'x'
	}
	if got := []rune(firstUsefulLine(long)); len(got) != maxMessageLine {
		t.Errorf("len(firstUsefulLine(1000 x)) = %d, want %d", len(got), maxMessageLine)
	}
}

func TestCommandName(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{nil, "(no args)"},
		{[]string{"ps"}, "ps"},
		{[]string{"network", "create", "x"}, "network create"},
		{[]string{"network", "--help"}, "network"},
		{[]string{"exec", "-i", "c", "sh"}, "exec"},
		{[]string{"rm", "--force", "c"}, "rm"},
	}
	for _, tc := range tests {
		if got := commandName(tc.args); got != tc.want {
			t.Errorf("commandName(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}

func TestLastLines(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"a\nb\nc\n", 2, "b\nc\n"},
		{"a\nb\nc", 2, "b\nc\n"},
		{"a\nb\nc\n", 5, "a\nb\nc\n"},
		{"a\n\x1b[91mb\x1b[0m\n", 1, "b\n"},
		{"", 3, "\n"},
	}
	for _, tc := range tests {
		if got := string(lastLines([]byte(tc.in), tc.n)); got != tc.want {
			t.Errorf("lastLines(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
