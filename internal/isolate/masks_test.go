package isolate

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMasksFollowLinksAsTheKernelDoes: what a masked symlink, or a literal mask path through a
// linked directory, leads to is found as the kernel finds it in a checkout, ".." applied to the
// directory a link resolved to, not joined as text. The user's work tree is the checkout the
// clone repeats, so the filesystem (filepath.EvalSymlinks, as a live run asks it) says which
// file is the real target; the clone must lack it, and keep the decoy the text join names.
func TestMasksFollowLinksAsTheKernelDoes(t *testing.T) {
	tests := []struct {
		name   string
		files  map[string]string // path → content; "KEY=" content is what the mask must keep out
		links  map[string]string // path → target
		mask   []string
		follow string // the masked name whose target the filesystem resolves
		want   string // run.Masked, space-separated
	}{{
		name:   "a link's .. after a linked directory",
		files:  map[string]string{"sub/dir/keep": "k\n", "sub/secrets.env": "KEY=real\n", "secrets.env": "decoy\n"},
		links:  map[string]string{"cfg": "sub/dir", ".env": "cfg/../secrets.env"},
		mask:   []string{".env"},
		follow: ".env",
		want:   ".env sub/secrets.env",
	}, {
		name:   "two .. back to the top",
		files:  map[string]string{"sub/dir/keep": "k\n", "x.env": "KEY=top\n", "sub/x.env": "decoy\n"},
		links:  map[string]string{"cfg": "sub/dir", ".env": "cfg/../../x.env"},
		mask:   []string{".env"},
		follow: ".env",
		want:   ".env x.env",
	}, {
		name:   "a chain of links, each with ..",
		files:  map[string]string{"a/b/keep": "k\n", "a/real.env": "KEY=chain\n", "real.env": "decoy\n"},
		links:  map[string]string{"d": "a/b", "hop": "d/../real.env", ".env": "hop"},
		mask:   []string{".env"},
		follow: ".env",
		want:   ".env a/real.env hop",
	}, {
		name:   "a literal path through a link to ..",
		files:  map[string]string{"deep/dir/keep": "k\n", "deep/secret.yml": "KEY=literal\n", "secret.yml": "decoy\n"},
		links:  map[string]string{"lnk": "deep/dir", "conf": "lnk/.."},
		mask:   []string{"conf/secret.yml"},
		follow: "conf/secret.yml",
		want:   "deep/secret.yml",
	}, {
		name:  "a link into .git masks only itself",
		files: map[string]string{"sub/dir/keep": "k\n"},
		links: map[string]string{"cfg": "sub/dir", ".env": "cfg/../../.git/config"},
		mask:  []string{".env"},
		want:  ".env",
	}, {
		name:  "a loop masks its links",
		files: map[string]string{"x": "x\n"},
		links: map[string]string{".env": "loop", "loop": ".env"},
		mask:  []string{".env"},
		want:  ".env loop",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			for p, data := range tc.files {
				writeFile(t, filepath.Join(f.ws, p), data)
			}
			for p, to := range tc.links {
				if err := os.Symlink(to, filepath.Join(f.ws, p)); err != nil {
					t.Fatal(err)
				}
			}
			f.git(f.ws, "add", ".")
			f.git(f.ws, "commit", "--quiet", "-m", "linked secrets")
			if tc.follow != "" {
				real, err := filepath.EvalSymlinks(filepath.Join(f.ws, tc.follow))
				if err != nil {
					t.Fatal(err)
				}
				ws, _ := filepath.EvalSymlinks(f.ws)
				rel, _ := filepath.Rel(ws, real)
				if !strings.Contains(" "+tc.want+" ", " "+filepath.ToSlash(rel)+" ") {
					t.Fatalf("the filesystem resolves %s to %s, which the case does not expect masked", tc.follow, rel)
				}
			}
			run := f.create("m", CreateOptions{Mask: tc.mask})
			if got := strings.Join(run.Masked, " "); got != tc.want {
				t.Errorf("Masked = %s, want %s", got, tc.want)
			}
			clone := f.repo.Project.Clone("m")
			if leaked, _ := exec.Command("git", "-C", clone, "grep", "-l", "-e", "KEY=", "HEAD").Output(); len(leaked) > 0 {
				t.Errorf("the clone's tree holds the masked target:\n%s", leaked)
			}
			for p, data := range tc.files {
				if !strings.HasPrefix(data, "KEY=") && !exists(filepath.Join(clone, p)) {
					t.Errorf("the clone lacks %s, which no mask covers", p)
				}
			}
		})
	}
}
