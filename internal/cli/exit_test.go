package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/images"
	"github.com/aboxhq/abox/internal/provision"
	"github.com/aboxhq/abox/internal/remedy"
)

// TestReportEscapesDetails: the build log and the gateway's log shown above an error are
// machine text that a workspace file or a server chose (a RUN step's output, a tool's name);
// a terminal escape in them reaches the person escaped, as in every other line abox prints.
func TestReportEscapesDetails(t *testing.T) {
	const esc = "\x1b]0;owned\x07\x1b[2J"
	for name, err := range map[string]error{
		"build log": remedy.Provision(&provision.StepError{Step: provision.StepImages,
			Err: &images.BuildError{Tag: "abox-agent-p:1", Log: "step 3\n" + esc + "\n"}}, "p"),
		"gateway log": remedy.Gateway(&gateway.UpError{Profile: "p", Log: "server says " + esc,
			Err: &gateway.UnhealthyError{}}, "p"),
	} {
		var b bytes.Buffer
		report(&b, err)
		if strings.ContainsAny(b.String(), "\x1b\x07") || !strings.Contains(b.String(), `\x1b]0;owned\a\x1b[2J`) {
			t.Errorf("%s: printed %q, want the escape written out", name, b.String())
		}
	}
}
