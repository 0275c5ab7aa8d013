//go:build e2e

package e2e

import (
	"os"
	"testing"

	"github.com/aboxhq/abox/e2e/harness"
)

func TestZZExploreDNS(t *testing.T) {
	h := harness.Setup(t)
	h.StartServer("exact.test")
	upProject(t, h, "explore", []string{"exact.test", "nowhere.test"}, "")
	res := h.Abox("run", bashLines(
		`claude net rt5-udpflood 127.0.0.1:15353 `+os.Getenv("ZZNAME")+` `+os.Getenv("ZZRATE")+` 15 > /tmp/f & `,
		`sleep 8; s=$(date +%s%N); echo "during $(claude net dns 127.0.0.1:15353 exact.test) $(( ($(date +%s%N) - s)/1000000 ))ms"`,
		`wait; echo "flood $(cat /tmp/f)"`,
		`sleep 5; echo "after $(claude net dns 127.0.0.1:15353 exact.test)"`,
	))
	t.Log(agentOutput(res.Stdout))
	t.Log(res.Stderr)
}
