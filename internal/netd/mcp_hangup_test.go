package netd

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/policy"
)

// TestMCPForwarderAgentHangsUp: an MCP client closes a POST's event stream once it has its
// response, often before the gateway ends the stream. The request was forwarded and answered,
// so netd logs it as allowed, with no reason; a client that closes the stream before its
// response (the tool may have run) is logged as allowed with that reason. Neither is a
// forwarding error.
func TestMCPForwarderAgentHangsUp(t *testing.T) {
	t.Run("after its response", func(t *testing.T) {
		r := hangUpAfter(t, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}\n\n")
		if r.Tool != "allowed_tool" || r.Verdict != policy.Allowed || r.Reason != "" {
			t.Errorf("logged %+v, want allowed_tool allowed with no reason: the agent had its response", r)
		}
	})
	t.Run("before its response", func(t *testing.T) {
		// A request of the server's to the client first, with an id of its own: no response.
		r := hangUpAfter(t, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"roots/list\"}\n\n")
		if r.Tool != "allowed_tool" || r.Verdict != policy.Allowed || !strings.Contains(r.Reason, "before its response") {
			t.Errorf("logged %+v, want allowed_tool allowed, the agent having closed the connection before its response", r)
		}
	})
}

// hangUpAfter forwards a tools/call whose event stream starts with first and then stays open,
// closes it once the agent has read first's first line, and returns the call's log record.
func hangUpAfter(t *testing.T, first string) policy.MCPRecord {
	release := make(chan struct{})
	defer close(release)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, first)
		w.(http.Flusher).Flush()
		select { // the stream stays open until the test ends
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer upstream.Close()
	port := upstream.Listener.Addr().(*net.TCPAddr).Port
	m := projectMCP()
	m.Upstream = fmt.Sprintf("http://abox-gw-test:%d/mcp", port)
	f := startForwarder(t, &gateway{port: port}, m, gatewayToken)

	req, _ := http.NewRequest(http.MethodPost, f.url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"allowed_tool"}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(resp.Body).ReadString('\n')
	if !strings.HasPrefix(line, "event: message") {
		t.Fatalf("first line = %q, want the response event", line)
	}
	resp.Body.Close() // as the go-sdk client does once it has its response
	return waitRecords[policy.MCPRecord](t, f.log, 1)[0]
}
