package policy

import "testing"

// TestNetdUIDFor: whatever uid the agent runs as, netd's serving process runs as another one,
// since the ruleset lets netd's uid out and nobody else; beside any agent but one of NetdUID's
// own, it is NetdUID.
func TestNetdUIDFor(t *testing.T) {
	for _, agent := range []int{1, 989, NetdUID, NetdUID + 1, 1000, 65534} {
		if got := NetdUIDFor(agent); got == agent {
			t.Errorf("NetdUIDFor(%d) = %d: the agent would be netd", agent, got)
		}
	}
	if got := NetdUIDFor(1000); got != NetdUID {
		t.Errorf("NetdUIDFor(1000) = %d, want %d", got, NetdUID)
	}
}
