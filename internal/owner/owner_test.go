package owner

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/render"
)

func ptr(v int) *int { return &v }

func TestResolve(t *testing.T) {
	tests := []struct {
		name     string
		uid, gid int
		override config.Agent
		want     render.Identity
		wantErr  string
	}{
		{"the owner", 1000, 1000, config.Agent{}, render.Identity{UID: 1000, GID: 1000}, ""},
		{"a CI runner", 1001, 121, config.Agent{}, render.Identity{UID: 1001, GID: 121}, ""},
		{"netd's default uid: the agent gets it, netd moves", 990, 990, config.Agent{}, render.Identity{UID: 990, GID: 990}, ""},
		{"root", 0, 0, config.Agent{}, render.Identity{}, "owned by uid 0 (root)"},
		{"root's group", 1000, 0, config.Agent{}, render.Identity{}, "owned by gid 0 (group root; uid 1000)"},
		{"root with an override", 0, 0, config.Agent{UID: ptr(4242), GID: ptr(4242)}, render.Identity{UID: 4242, GID: 4242}, ""},
		{"override of the uid only", 0, 50, config.Agent{UID: ptr(1000)}, render.Identity{UID: 1000, GID: 50}, ""},
		{"override of the uid only, group root", 0, 0, config.Agent{UID: ptr(1000)}, render.Identity{}, "gid 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stat := func(string) (int, int, error) { return tc.uid, tc.gid, nil }
			got, err := Resolve("/p", tc.override, stat)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Resolve = %v", err)
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, ErrRootOwned) {
					t.Fatalf("Resolve = %v, %v; want an ErrRootOwned containing %q", got, err, tc.wantErr)
				}
				return
			}
			if got != tc.want {
				t.Errorf("Resolve = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestStatOwnerOfAMissingWorkspace(t *testing.T) {
	uid, gid, err := StatOwner(filepath.Join(t.TempDir(), "not-yet"))
	if err != nil || uid != os.Geteuid() || gid != os.Getegid() {
		t.Errorf("StatOwner = %d, %d, %v; want this process's ids", uid, gid, err)
	}
}

func TestCanWrite(t *testing.T) {
	dir := t.TempDir()
	uid, gid, err := StatOwner(dir)
	if err != nil {
		t.Fatal(err)
	}
	me := render.Identity{UID: uid, GID: gid}
	other := render.Identity{UID: uid + 4242, GID: gid + 4242}
	group := render.Identity{UID: uid + 4242, GID: gid}
	for _, tc := range []struct {
		mode os.FileMode
		id   render.Identity
		want bool
	}{
		{0o755, me, true}, {0o555, me, false}, {0o755, other, false}, {0o777, other, true},
		{0o775, group, true}, {0o755, group, false}, {0o733, other, true}, {0o776, other, false},
	} {
		if err := os.Chmod(dir, tc.mode); err != nil {
			t.Fatal(err)
		}
		ok, why := CanWrite(dir, tc.id)
		if ok != tc.want || (!ok && !strings.Contains(why, "cannot create files")) {
			t.Errorf("CanWrite(mode %04o, %v) = %v %q, want %v", tc.mode, tc.id, ok, why, tc.want)
		}
	}
}
