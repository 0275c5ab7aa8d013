package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/docker/dockertest"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/render"
)

// nftObjects is a decoded `nft -j` listing, for editing in a test.
type nftObjects []map[string]map[string]any

func decodeListing(t *testing.T, data []byte) nftObjects {
	t.Helper()
	var doc struct {
		Nftables nftObjects `json:"nftables"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Nftables
}

func (objs nftObjects) encode(t *testing.T) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"nftables": objs})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rule returns the index of the abox rule of chain with comment, failing the test if none.
func (objs nftObjects) rule(t *testing.T, chain, comment string) int {
	t.Helper()
	for i, o := range objs {
		if r, ok := o["rule"]; ok && r["table"] == policy.Table && r["chain"] == chain && r["comment"] == comment {
			return i
		}
	}
	t.Fatalf("the expected ruleset has no rule %q in chain %s", comment, chain)
	return -1
}

// object returns the body of the abox object of kind named name.
func (objs nftObjects) object(t *testing.T, kind, name string) map[string]any {
	t.Helper()
	for _, o := range objs {
		if b, ok := o[kind]; ok && b["table"] == policy.Table && b["name"] == name {
			return b
		}
	}
	t.Fatalf("the expected ruleset has no %s %s", kind, name)
	return nil
}

// match returns the first match expression of a rule body.
func match(t *testing.T, rule map[string]any) map[string]any {
	t.Helper()
	for _, e := range rule["expr"].([]any) {
		if m, ok := e.(map[string]any)["match"]; ok {
			return m.(map[string]any)
		}
	}
	t.Fatalf("rule %v has no match", rule["comment"])
	return nil
}

// edited returns the expected listing with edit applied.
func edited(t *testing.T, edit func(t *testing.T, objs nftObjects) nftObjects) []byte {
	t.Helper()
	return edit(t, decodeListing(t, policy.ExpectedRuleset(policy.NetdUID))).encode(t)
}

// verifySandbox returns a sandbox whose netd reports ready and whose read-back of the loaded
// ruleset answers live, and its fake docker. Teardown calls are answered but not required.
func verifySandbox(t *testing.T, live []byte, execErr bool) (*Sandbox, *dockertest.Fake) {
	t.Helper()
	fake := dockertest.New(t)
	fake.On("run", docker.Result{Stdout: []byte("netd-id\n")})
	fake.On("create", docker.Result{Stdout: []byte("agent-id\n")})
	fake.On("logs", docker.Result{Stdout: []byte(netdOutput)})
	if execErr {
		fake.On("exec", docker.Result{ExitCode: 1, Stderr: []byte("Error: cannot list ruleset\n")})
	} else {
		fake.On("exec", docker.Result{Stdout: live})
	}
	fake.On("start", docker.Result{}).Optional()
	fake.OnFunc("wait", func(docker.Invocation) (docker.Result, error) {
		time.Sleep(5 * time.Second) // netd outlives the agent
		return docker.Result{}, nil
	}).Optional()
	fake.On("container inspect", docker.Result{Stdout: []byte(`{"State":{"Running":false,"ExitCode":0}}`)}).Optional()
	fake.On("stop", docker.Result{}).Optional()
	fake.On("kill --signal USR1", docker.Result{}).Optional()
	fake.On("rm", docker.Result{}).Optional()
	fake.On("cp", docker.Result{}).Optional()
	return newVerifySandbox(t, fake), fake
}

// newVerifySandbox returns a sandbox of a project in t's temporary directories, driving fake.
func newVerifySandbox(t *testing.T, fake *dockertest.Fake) *Sandbox {
	return &Sandbox{
		Docker: docker.NewClient(fake, nil), Warden: goWarden(docker.NewClient(fake, nil), nil),
		Project:  paths.Project{Workspace: t.TempDir(), Dir: t.TempDir()},
		Baseline: policy.ExpectedRuleset(policy.NetdUID),
		Spec: &render.RunSpec{
			Netd:  render.RunCommand{Args: []string{"run", "--name", "abox-netd-p-" + render.RunToken}, Image: "abox-netd:1"},
			Agent: render.RunCommand{Args: []string{"create", "--name", "agent-p-" + render.RunToken}, Image: "abox-agent-p:1", Command: []string{"claude"}},
		},
		Now: time.Now,
	}
}

func agentStarted(fake *dockertest.Fake) bool {
	return slices.ContainsFunc(fake.Calls(), func(c dockertest.Call) bool { return c.Args[0] == "start" })
}

// TestVerifyRefusesAWrongRuleset: the read-back gates the agent. Each listing here differs from
// netpolicy.nft in one way that would loosen the sandbox, and each must refuse the run as a
// boundary failure, naming what differs, before the agent container is started.
func TestVerifyRefusesAWrongRuleset(t *testing.T) {
	liveDocker, err := os.ReadFile(filepath.Join("..", "policy", "testdata", "live-docker.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		live    []byte
		execErr bool
		want    string // in the error
	}{
		{name: "the final reject missing", want: `"comment":"refused"`,
			live: edited(t, func(t *testing.T, o nftObjects) nftObjects {
				return slices.Delete(o, o.rule(t, "output", "refused"), o.rule(t, "output", "refused")+1)
			})},
		{name: "a rule in the middle missing", want: `"comment":"loopback"`,
			live: edited(t, func(t *testing.T, o nftObjects) nftObjects {
				i := o.rule(t, "output", "loopback")
				return slices.Delete(o, i, i+1)
			})},
		{name: "an accept-all rule added", want: `unexpected rule in chain inet abox output ("x")`,
			live: edited(t, func(t *testing.T, o nftObjects) nftObjects {
				return append(o, map[string]map[string]any{"rule": {"family": "inet", "table": policy.Table, "chain": "output",
					"handle": 99, "comment": "x", "expr": []any{map[string]any{"accept": nil}}}})
			})},
		{name: "established widened to new flows", want: `("established") differs`,
			live: edited(t, func(t *testing.T, o nftObjects) nftObjects {
				m := match(t, o[o.rule(t, "output", "established")]["rule"])
				m["right"] = append(m["right"].([]any), "new")
				return o
			})},
		{name: "loopback widened to every address", want: `("loopback") differs`,
			live: edited(t, func(t *testing.T, o nftObjects) nftObjects {
				m := match(t, o[o.rule(t, "output", "loopback")]["rule"])
				m["right"] = map[string]any{"prefix": map[string]any{"addr": "0.0.0.0", "len": 0}}
				return o
			})},
		{name: "netd's upstream opened to the agent's uid", want: `("netd upstream") differs`,
			live: edited(t, func(t *testing.T, o nftObjects) nftObjects {
				match(t, o[o.rule(t, "output", "netd upstream")]["rule"])["right"] = 1000
				return o
			})},
		{name: "tls no longer redirected", want: `("tls to netd") differs`,
			live: edited(t, func(t *testing.T, o nftObjects) nftObjects {
				r := o[o.rule(t, "nat_output", "tls to netd")]["rule"]
				exprs := r["expr"].([]any)
				exprs[len(exprs)-1] = map[string]any{"accept": nil}
				return o
			})},
		{name: "output policy accept", want: "chain inet abox output differs",
			live: edited(t, func(t *testing.T, o nftObjects) nftObjects {
				o.object(t, "chain", "output")["policy"] = "accept"
				return o
			})},
		{name: "input policy accept", want: "chain inet abox input differs",
			live: edited(t, func(t *testing.T, o nftObjects) nftObjects {
				o.object(t, "chain", "input")["policy"] = "accept"
				return o
			})},
		{name: "agent set unbounded", want: "set inet abox agent_dst differs",
			live: edited(t, func(t *testing.T, o nftObjects) nftObjects {
				delete(o.object(t, "set", "agent_dst"), "size")
				return o
			})},
		{name: "two rules swapped", want: "differs",
			live: edited(t, func(t *testing.T, o nftObjects) nftObjects {
				i, j := o.rule(t, "output", "established"), o.rule(t, "output", "refused")
				o[i], o[j] = o[j], o[i]
				return o
			})},
		{name: "an accept-all rule in docker's table", want: "unexpected rule in chain ip nat OUTPUT",
			live: func() []byte {
				o := decodeListing(t, liveDocker)
				return append(o, map[string]map[string]any{"rule": {"family": "ip", "table": "nat", "chain": "OUTPUT",
					"handle": 99, "expr": []any{map[string]any{"accept": nil}}}}).encode(t)
			}()},
		{name: "no abox table", want: "table inet abox is not loaded",
			live: []byte(`{"nftables": [{"metainfo": {"json_schema_version": 1}}]}`)},
		{name: "not a listing", want: "live ruleset: decoding", live: []byte("table inet abox {}\n")},
		{name: "the read-back fails", want: "reading the loaded ruleset", execErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, fake := verifySandbox(t, tc.live, tc.execErr)
			out, err := s.Run(context.Background(), Options{Prompt: "hi"})
			if !errors.Is(err, ErrBoundary) {
				t.Fatalf("Run = %v, want ErrBoundary", err)
			}
			if !strings.Contains(err.Error(), tc.want) || (tc.live != nil && !strings.Contains(err.Error(), "differs from netpolicy.nft")) {
				t.Errorf("Run error = %v, want it to say %q", err, tc.want)
			}
			if out.Result != "refused" {
				t.Errorf("Result = %q, want refused", out.Result)
			}
			if agentStarted(fake) {
				t.Error("the agent was started on a ruleset that did not verify")
			}
		})
	}
}

// TestVerifyAcceptsTheLoadedRuleset: what nft really lists after netd loaded the policy, with
// Docker's own tables beside it, and the same with the counters, handles and set elements a
// running sandbox has, verifies, and the agent starts. Without this the test above would pass
// for a read-back that refused everything.
func TestVerifyAcceptsTheLoadedRuleset(t *testing.T) {
	liveDocker, err := os.ReadFile(filepath.Join("..", "policy", "testdata", "live-docker.json"))
	if err != nil {
		t.Fatal(err)
	}
	running := func() []byte {
		o := decodeListing(t, liveDocker)
		for _, obj := range o {
			for kind, body := range obj {
				if h, ok := body["handle"].(float64); ok {
					body["handle"] = h + 100
				}
				if kind == "set" && body["name"] == policy.SetAgent {
					body["elem"] = []any{map[string]any{"elem": map[string]any{"val": map[string]any{"concat": []any{"93.184.216.34", 22}}, "timeout": 60}}}
				}
				for _, e := range asSlice(body["expr"]) {
					if c, ok := e.(map[string]any)["counter"].(map[string]any); ok {
						c["packets"], c["bytes"] = 7, 420
					}
				}
			}
		}
		return o.encode(t)
	}()
	for name, live := range map[string][]byte{"as loaded": liveDocker, "while running": running} {
		t.Run(name, func(t *testing.T) {
			s, fake := verifySandbox(t, live, false)
			out, err := s.Run(context.Background(), Options{Prompt: "hi"})
			if err != nil {
				t.Fatalf("Run = %v (notes %v)", err, out.Notes)
			}
			if !agentStarted(fake) {
				t.Error("the agent was not started on a ruleset that verified")
			}
		})
	}
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

// TestVerifyRefusesANetdThatIsNotReady: no ready line, because netd exited or said nothing in
// time, refuses the run before the ruleset is even read, with netd's last words in the error.
func TestVerifyRefusesANetdThatIsNotReady(t *testing.T) {
	for _, tc := range []struct {
		name string
		logs func(docker.Invocation) (docker.Result, error)
		want []string
	}{
		{"netd exited", func(docker.Invocation) (docker.Result, error) {
			return docker.Result{Stdout: []byte("{\"event\":\"start\"}\nnft: Error: Could not process rule\n")}, nil
		}, []string{"netd did not become ready: netd exited", "netd said: {\"event\":\"start\"} | nft: Error: Could not process rule"}},
		{"netd silent", func(docker.Invocation) (docker.Result, error) {
			time.Sleep(300 * time.Millisecond)
			return docker.Result{}, nil
		}, []string{"netd did not become ready: no ready line within 50ms"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := dockertest.New(t)
			fake.On("run", docker.Result{Stdout: []byte("netd-id\n")})
			fake.On("create", docker.Result{Stdout: []byte("agent-id\n")})
			fake.OnFunc("logs", tc.logs)
			fake.On("stop", docker.Result{}).Optional()
			fake.On("kill --signal USR1", docker.Result{}).Optional()
			fake.On("rm", docker.Result{}).Optional()
			fake.On("cp", docker.Result{}).Optional()
			s := newVerifySandbox(t, fake)
			out, err := s.Run(context.Background(), Options{Prompt: "hi", ReadyTimeout: 50 * time.Millisecond})
			if !errors.Is(err, ErrBoundary) {
				t.Fatalf("Run = %v, want ErrBoundary", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Run error = %v, want it to say %q", err, w)
				}
			}
			if out.Result != "refused" {
				t.Errorf("Result = %q, want refused", out.Result)
			}
			for _, c := range fake.Calls() {
				if c.Args[0] == "exec" || c.Args[0] == "start" {
					t.Errorf("docker %s was called for a netd that was not ready", c.Args[0])
				}
			}
		})
	}
}
