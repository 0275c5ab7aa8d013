package manifest

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPropose(t *testing.T) {
	suggested := map[string][]string{"go": {"proxy.golang.example"}, "node": {"registry.npm.example", "ignored.example"}}
	t.Run("a new manifest: fallbacks, detection and remotes", func(t *testing.T) {
		got := Propose(nil, Proposal{
			Given:   Manifest{Egress: []string{"api.example.com"}, Mounts: Mounts{Mask: []string{"secrets/"}}},
			Project: "demo", Profile: "default",
			Toolchains: []string{"go"}, Suggested: suggested, Remotes: []string{"github.com"},
		})
		want := &Manifest{
			Version: Version, Project: "demo", Profile: "default", Run: Run{PermissionMode: ModeDefault},
			Toolchains: []string{"go"}, Egress: []string{"api.example.com", "proxy.golang.example", "github.com"},
			Mounts: Mounts{Mask: []string{"secrets/"}},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Propose() mismatch (-want +got):\n%s", diff)
		}
	})
	t.Run("an existing manifest: its values first, flags override the names", func(t *testing.T) {
		existing := &Manifest{
			Project: "old", Profile: "work", Run: Run{PermissionMode: ModePlan},
			Servers: []string{"github"}, Toolchains: []string{"go"},
			Egress: []string{"Proxy.Golang.Example"}, EgressIgnored: []string{"ignored.example"},
			Mounts: Mounts{Mask: []string{".env"}, Context: []string{"/srv/docs"}},
		}
		got := Propose(existing, Proposal{
			Given:   Manifest{Project: "new", Servers: []string{"fetch", "github"}, Toolchains: []string{"node"}},
			Project: "fallback", Profile: "default",
			Toolchains: []string{"go"}, Suggested: suggested, Remotes: []string{"github.com"},
		})
		want := &Manifest{
			Version: Version, Project: "new", Profile: "work", Run: Run{PermissionMode: ModePlan},
			Servers: []string{"github", "fetch"}, Toolchains: []string{"go", "node"},
			// go is already there: no suggestion for it; node's, minus the ignored one; no remotes.
			Egress: []string{"Proxy.Golang.Example", "registry.npm.example"},
			Mounts: Mounts{Mask: []string{".env"}, Context: []string{"/srv/docs"}},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Propose() mismatch (-want +got):\n%s", diff)
		}
	})
}
