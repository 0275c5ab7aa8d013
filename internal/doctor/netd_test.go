package doctor

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/telemetry"
)

func TestNetdImageHoldsThisBinary(t *testing.T) {
	f := newFixture(t, baseManifest).healthy()
	wantStatus(t, "netd.image", f.run(netdImage), OK)
	f.binary = strings.Repeat("c", 64)
	got := f.run(netdImage)
	wantStatus(t, "netd.image (other binary)", got, Fail)
	if !strings.Contains(got.Hint, "abox up") {
		t.Errorf("hint %q", got.Hint)
	}
}

func TestNetdPolicyRendered(t *testing.T) {
	f := newFixture(t, baseManifest).healthy()
	wantStatus(t, "netd.policy", f.run(netdPolicyCheck), OK)
	f.writeArtifact(render.NetdDir+"/"+policy.RulesFile, bytes.Replace(policy.Ruleset(policy.NetdUID), []byte("policy drop"), []byte("policy accept"), 1))
	wantStatus(t, "netd.policy (edited)", f.run(netdPolicyCheck), Fail)
	wantStatus(t, "boundary.policy", boundaryResult(t, f, "boundary.policy").Finding, Fail)
}

// TestNetdPolicyLive reads a running netd's ruleset back: as loaded it passes; with an accept
// rule added it fails, naming the difference.
func TestNetdPolicyLive(t *testing.T) {
	for _, tc := range []struct {
		name    string
		listing []byte
		want    Status
	}{
		{"as rendered", policy.ExpectedRuleset(policy.NetdUID), OK},
		{"an accept rule added", addAcceptRule(t, policy.ExpectedRuleset(policy.NetdUID)), Fail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, baseManifest).daemonUp().built().noGateway()
			f.running(f.liveNetd(), f.liveAgent())
			f.fake.On("exec --user 0 abox-netd-demo-0123abcd /usr/sbin/nft -j list ruleset", docker.Result{Stdout: tc.listing})
			got := f.run(netdPolicyCheck)
			wantStatus(t, "netd.policy", got, tc.want)
			if tc.want == OK && !strings.Contains(got.Detail, "1 running netd") {
				t.Errorf("detail %q", got.Detail)
			}
		})
	}
}

// addAcceptRule adds "accept everything" to the output chain of an nft -j listing.
func addAcceptRule(t *testing.T, listing []byte) []byte {
	t.Helper()
	var doc map[string][]map[string]any
	if err := json.Unmarshal(listing, &doc); err != nil {
		t.Fatal(err)
	}
	doc["nftables"] = append(doc["nftables"], map[string]any{"rule": map[string]any{
		"family": "inet", "table": policy.Table, "chain": "output", "handle": 999,
		"expr": []any{map[string]any{"accept": nil}},
	}})
	b, _ := json.Marshal(doc)
	return b
}

func TestEgressQueueAndRefused(t *testing.T) {
	f := newFixture(t, baseManifest+"egress_ignored: [ignored.example]\n").healthy()
	wantStatus(t, "egress.queue (empty)", f.run(egressQueue), OK)
	lines := []string{
		`{"run":"r1","ts":"2026-11-01T10:00:00Z","kind":"dns","name":"pastebin.example.net","count":3}`,
		`{"run":"r2","ts":"2026-11-02T10:00:00Z","kind":"dns","name":"pastebin.example.net","count":2}`,
		`{"run":"r2","ts":"2026-11-02T10:00:00Z","kind":"dns","name":"example.com","count":9}`,
		`{"run":"r2","ts":"2026-11-02T10:00:00Z","kind":"dns","name":"ignored.example","count":9}`,
		`{"run":"r2","ts":"2026-11-02T10:00:00Z","kind":"conn","name":"sni.example.org","count":4}`,
		`not json`,
	}
	if err := writeFile(f.project.Denied(), strings.Join(lines, "\n")+"\n"); err != nil {
		t.Fatal(err)
	}
	q := f.run(egressQueue)
	wantStatus(t, "egress.queue", q, Warn)
	if q.Detail != "1 name(s) looked up but not allowed: pastebin.example.net (x5)" || q.Data["count"] != 5 {
		t.Errorf("egress.queue = %q, data %v", q.Detail, q.Data)
	}
	r := f.run(egressRefused)
	wantStatus(t, "egress.refused", r, Warn)
	if !strings.Contains(r.Detail, "sni.example.org (x4)") || strings.Contains(r.Detail, "pastebin") {
		t.Errorf("egress.refused = %q", r.Detail)
	}
}

func TestEgressMandatory(t *testing.T) {
	f := newFixture(t, baseManifest).healthy()
	wantStatus(t, "egress.mandatory", f.run(egressMandatory), OK)
	data, _ := f.env().artifactFile(render.NetdDir + "/" + policy.File)
	f.writeArtifact(render.NetdDir+"/"+policy.File, bytes.Replace(data, []byte(`"platform.claude.com",`), nil, -1))
	got := f.run(egressMandatory)
	wantStatus(t, "egress.mandatory (removed)", got, Fail)
	if !strings.Contains(got.Detail, "platform.claude.com") {
		t.Errorf("detail %q", got.Detail)
	}
}

// TestEgressLogCaps: doctor reports, with counts, the recent runs whose decision logs hit a
// bound of netd's, and fails when netd could record a denial nowhere.
func TestEgressLogCaps(t *testing.T) {
	capped := telemetry.LogCap{Log: policy.DNSLog, Limit: 1 << 20, Dropped: 5000, DroppedDenied: 1, Counts: telemetry.CountsFinal}
	lost := telemetry.LogCap{Log: policy.DNSLog, Limit: 1 << 20, Dropped: 9, DroppedDenied: 9, Untracked: 3, Lost: 2, Counts: telemetry.CountsFinal}
	for _, tc := range []struct {
		name   string
		runs   []telemetry.RunRecord
		status Status
		detail string
	}{
		{"no runs", nil, OK, "the last 0 run(s) stayed within them"},
		{"within", []telemetry.RunRecord{{ID: "r1"}}, OK, "the last 1 run(s) stayed within them"},
		{"capped", []telemetry.RunRecord{{ID: "r1", LogCaps: []telemetry.LogCap{capped}}, {ID: "r2"}}, Warn,
			"1 log(s) of the last 2 run(s) hit a bound: run r1: dns.jsonl: reached its 1 MiB cap; 5000 decision(s) not logged, 1 of them denials; every denied name is in the review queue"},
		{"lost", []telemetry.RunRecord{{ID: "r1", LogCaps: []telemetry.LogCap{lost}}}, Fail, "2 denial(s) recorded nowhere; run r1: dns.jsonl:"},
		{"older than the last ten", append([]telemetry.RunRecord{{ID: "old", LogCaps: []telemetry.LogCap{lost}}}, make([]telemetry.RunRecord, recentRuns)...), OK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, baseManifest).healthy()
			for _, r := range tc.runs {
				if err := telemetry.AppendRun(f.project.RunsIndex(), r); err != nil {
					t.Fatal(err)
				}
			}
			got := f.run(egressLogCaps)
			wantStatus(t, "egress.log-caps", got, tc.status)
			if !strings.Contains(got.Detail, tc.detail) {
				t.Errorf("detail %q, want it to hold %q", got.Detail, tc.detail)
			}
			if tc.status != OK && got.Hint == "" {
				t.Errorf("%s without a hint", tc.status)
			}
		})
	}
}
