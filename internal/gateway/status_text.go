package gateway

import (
	"fmt"
	"io"
	"strings"

	"github.com/aboxhq/abox/internal/termtext"
)

// WriteText writes st as `abox gateway status` prints it. paint colours a string ("red",
// "green", "yellow"); it returns s unchanged when colour is off. Tool names come from the
// gateway's servers and are escaped.
func (st Status) WriteText(w io.Writer, paint func(colour, s string) string) {
	state := paint("red", st.State)
	switch {
	case st.State == "running" && st.Health == "healthy":
		state = paint("green", "running, healthy")
	case st.State == "running":
		state = paint("yellow", "running, "+st.Health)
	}
	fmt.Fprintf(w, "%s  %s  %s\n", st.Profile, st.Container, state)
	line := func(label, v string) { fmt.Fprintf(w, "  %-10s %s\n", label+":", v) }
	if st.Detail != "" {
		line("detail", st.Detail)
	}
	if st.State != "missing" {
		line("url", st.URL)
	}
	line("projects", listOrNone(st.Projects))
	if st.State != "missing" {
		line("servers", listOrNone(st.Servers))
	}
	if len(st.Remote) > 0 {
		line("remote", strings.Join(st.Remote, ", ")+" (proxied by the gateway)")
	}
	if st.Tools != nil {
		line(fmt.Sprintf("tools (%d)", len(st.Tools)), termtext.Line(listOrNone(st.Tools)))
	}
	if len(st.PublishedPorts) > 0 {
		line("published", paint("red", strings.Join(st.PublishedPorts, ", ")+": the gateway must publish nothing; recreate it with `abox gateway up --force "+st.Profile+"`"))
	}
	if st.State != "missing" && !st.Current {
		line("drift", paint("yellow", "differs from what its projects declare now; `abox gateway up "+st.Profile+"` reconciles it"))
	}
	if st.State == "missing" && len(st.Projects) > 0 {
		line("next", "`abox gateway up "+st.Profile+"` starts it")
	}
}

func listOrNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ", ")
}
