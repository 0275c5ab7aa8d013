package gateway

import (
	"strings"
	"testing"
)

func TestStatusWriteText(t *testing.T) {
	plain := func(_, s string) string { return s }
	var b strings.Builder
	Status{Profile: "default", Container: "abox-gw-default", State: "running", Health: "healthy", URL: "http://gw:8811",
		Projects: []string{"p"}, Servers: []string{"fetch"}, Remote: []string{"r"}, Tools: []string{"t\x1b[2J"},
		PublishedPorts: []string{"0.0.0.0:8811->8811/tcp"}}.WriteText(&b, plain)
	out := b.String()
	for _, want := range []string{
		"default  abox-gw-default  running, healthy\n",
		"  url:       http://gw:8811\n", "  projects:  p\n", "  servers:   fetch\n",
		"  remote:    r (proxied by the gateway)\n",
		"  published: 0.0.0.0:8811->8811/tcp: the gateway must publish nothing; recreate it with `abox gateway up --force default`\n",
		"  drift:     differs from what its projects declare now; `abox gateway up default` reconciles it\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("a tool name's escape printed raw: %q", out)
	}

	b.Reset()
	Status{Profile: "x", Container: "c", State: "missing", Projects: []string{"p"}}.WriteText(&b, func(c, s string) string { return c + "(" + s + ")" })
	if got, want := b.String(), "x  c  red(missing)\n  projects:  p\n  next:      `abox gateway up x` starts it\n"; got != want {
		t.Errorf("missing gateway = %q, want %q", got, want)
	}
}
