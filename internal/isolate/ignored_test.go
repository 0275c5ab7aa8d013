package isolate

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDiffFlagsReplacedIgnoredFiles: the branch adds files where the user's checkout holds
// something git ignores — by .gitignore, .git/info/exclude or the user's core.excludesFile — and
// git merge would overwrite it unasked. Diff names what each file replaces; it flags nothing git
// would refuse to overwrite itself (an untracked file no rule covers, a symlink a directory-only
// rule does not match), nothing tracked and nothing empty, and looks through no symlink of the
// user's: a file below one replaces the link, and a tracked link is the user's tracked file.
func TestDiffFlagsReplacedIgnoredFiles(t *testing.T) {
	tests := []struct {
		name    string
		ignore  string            // the user's .gitignore, committed
		exclude string            // .git/info/exclude
		global  string            // the file the user's core.excludesFile names
		tracked map[string]string // the user's tracked symlinks: path → target ("OUT/…" is outside)
		sub     string            // a repository of the user's checkout, tracked as a gitlink the branch drops
		user    map[string]string // the user's untracked files ("" a directory, "->T" a symlink to T)
		branch  map[string]string // what the agent commits ("" removes the path first)
		want    map[string]string // File.Ignored by path; the rest must have none
	}{{
		name:   "an ignored file",
		ignore: ".env\n",
		user:   map[string]string{".env": "TOKEN=user-secret\n"},
		branch: map[string]string{".env": "TOKEN=agent\n", "new.txt": "x\n"},
		want:   map[string]string{".env": ".env"},
	}, {
		name:   "in an ignored directory",
		ignore: "node_modules/\n",
		user:   map[string]string{"node_modules/.bin/x": "#!/bin/sh\n"},
		branch: map[string]string{"node_modules/.bin/x": "#!/bin/sh\nevil\n", "node_modules/.bin/y": "y\n"},
		want:   map[string]string{"node_modules/.bin/x": "node_modules/.bin/x"},
	}, {
		name:    "ignored by info/exclude",
		exclude: "local.cfg\n",
		user:    map[string]string{"local.cfg": "mine\n"},
		branch:  map[string]string{"local.cfg": "theirs\n"},
		want:    map[string]string{"local.cfg": "local.cfg"},
	}, {
		name:   "ignored by the user's core.excludesFile",
		global: "*.key\n",
		user:   map[string]string{"id.key": "KEY\n"},
		branch: map[string]string{"id.key": "other\n"},
		want:   map[string]string{"id.key": "id.key"},
	}, {
		name:   "untracked and not ignored: git refuses it itself",
		user:   map[string]string{"notes.txt": "mine\n"},
		branch: map[string]string{"notes.txt": "theirs\n"},
	}, {
		name:   "a tracked file the branch changes",
		ignore: "README\n",
		branch: map[string]string{"README": "changed\n"},
	}, {
		name:   "an ignored symlink where the branch puts a directory",
		ignore: "cfg\n",
		user:   map[string]string{"cfg": "->OUT", "OUT/x": "outside\n"},
		branch: map[string]string{"cfg/x": "agent\n"},
		want:   map[string]string{"cfg/x": "cfg"},
	}, {
		name:   "a symlink a directory-only rule does not match",
		ignore: "nm/\n",
		user:   map[string]string{"nm": "->OUT", "OUT/x": "outside\n"},
		branch: map[string]string{"nm/x": "agent\n"},
	}, {
		name:    "a tracked link the branch makes a directory is not looked through",
		ignore:  "*.env\n",
		tracked: map[string]string{"out": "OUT"},
		user:    map[string]string{"OUT/secret.env": "outside\n"},
		branch:  map[string]string{"out": "", "out/secret.env": "agent\n"},
	}, {
		name:   "a directory of ignored files where the branch puts a file",
		ignore: "*.o\n",
		user:   map[string]string{"build/out.o": "object\n", "build/sub/more.o": "object\n"},
		branch: map[string]string{"build": "a file now\n"},
		want:   map[string]string{"build": "build/"},
	}, {
		name:   "an ignored directory where the branch puts a file",
		ignore: "venv/\n",
		user:   map[string]string{"venv/bin/python": "py\n"},
		branch: map[string]string{"venv": "a file now\n"},
		want:   map[string]string{"venv": "venv/"},
	}, {
		name:   "a directory inside an ignored one where the branch puts a file",
		ignore: "vendor/\n",
		user:   map[string]string{"vendor/lib/f": "mine\n", "vendor/other": "mine\n"},
		branch: map[string]string{"vendor/lib": "a file now\n"},
		want:   map[string]string{"vendor/lib": "vendor/lib/"},
	}, {
		name:   "an empty ignored directory",
		ignore: "tmp/\n",
		user:   map[string]string{"tmp": ""},
		branch: map[string]string{"tmp": "a file now\n"},
	}, {
		name:   "in a submodule's checkout, judged by the rules alone",
		ignore: "*.o\n",
		sub:    "sub",
		user:   map[string]string{"sub/f.o": "mine\n"},
		branch: map[string]string{"sub/f.o": "agent\n", "sub/a": "agent\n", "sub/new": "agent\n"},
		want:   map[string]string{"sub/f.o": "sub/f.o"},
	}, {
		name:   "a name git would read as pathspec magic",
		ignore: ":*\n",
		user:   map[string]string{":(glob)x": "mine\n", ":(top)y/z": "mine\n", ":(attr)d/f": "mine\n"},
		branch: map[string]string{":(glob)x": "theirs\n", ":(top)y/z": "theirs\n", ":(attr)d": "theirs\n"},
		want:   map[string]string{":(glob)x": ":(glob)x", ":(top)y/z": ":(top)y/z", ":(attr)d": ":(attr)d/"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			out := t.TempDir()
			at := func(s string) string { return strings.Replace(s, "OUT", out, 1) }
			if tc.global != "" {
				global := filepath.Join(os.Getenv("HOME"), ".gitignore_global")
				writeFile(t, global, tc.global)
				f.git(f.ws, "config", "--global", "core.excludesFile", global)
			}
			writeFile(t, filepath.Join(f.ws, ".gitignore"), tc.ignore)
			for p, to := range tc.tracked {
				if err := os.Symlink(at(to), filepath.Join(f.ws, p)); err != nil {
					t.Fatal(err)
				}
			}
			if tc.sub != "" {
				writeFile(t, filepath.Join(f.ws, tc.sub, "a"), "the submodule's\n")
				f.git(filepath.Join(f.ws, tc.sub), "init", "--quiet")
				f.git(filepath.Join(f.ws, tc.sub), "add", "a")
				f.git(filepath.Join(f.ws, tc.sub), "commit", "--quiet", "-m", "sub")
			}
			f.git(f.ws, "add", ".")
			f.git(f.ws, "commit", "--quiet", "-m", "the user's")
			writeFile(t, filepath.Join(f.ws, ".git/info/exclude"), tc.exclude)
			f.create("ig", CreateOptions{})
			clone := f.repo.Project.Clone("ig")
			if tc.sub != "" {
				f.git(clone, "rm", "--quiet", "--cached", tc.sub)
			}
			for p, data := range tc.branch { // removals first: a directory may replace a link
				if data == "" {
					if err := os.Remove(filepath.Join(clone, p)); err != nil {
						t.Fatal(err)
					}
				}
			}
			for p, data := range tc.branch {
				if data != "" {
					writeFile(t, filepath.Join(clone, p), data)
				}
			}
			f.git(clone, "add", "--force", "--all")
			f.git(clone, "-c", "user.name=agent", "-c", "user.email=agent@sandbox", "commit", "--quiet", "-m", "agent")
			f.collect("ig")
			for p, data := range tc.user {
				full := at(filepath.Join(f.ws, p))
				if strings.HasPrefix(p, "OUT") {
					full = at(p)
				}
				switch {
				case data == "":
					if err := os.MkdirAll(full, 0o755); err != nil {
						t.Fatal(err)
					}
				case strings.HasPrefix(data, "->"):
					if err := os.Symlink(at(data[2:]), full); err != nil {
						t.Fatal(err)
					}
				default:
					writeFile(t, full, data)
				}
			}
			d, err := f.repo.Diff(context.Background(), "ig", false)
			if err != nil {
				t.Fatal(err)
			}
			for _, file := range d.Files {
				if file.Ignored != tc.want[file.Path] || file.Flagged() != (file.Ignored != "") {
					t.Errorf("%s: Ignored %q, flagged %v; want %q", file.Path, file.Ignored, file.Flagged(), tc.want[file.Path])
				}
			}
		})
	}
}

// TestMergeRefusesReplacingIgnoredFiles: the agent commits a .env of its own while the user's
// checkout holds an ignored .env with a secret, and the user commits on after the run started,
// so the merge is a merge commit, for which git 2.39 has no --no-overwrite-ignore. `abox diff`
// marks .env "✖", Merge refuses it without force and leaves the user's file alone; forced, the
// merge writes the branch's .env over it, as git does.
func TestMergeRefusesReplacingIgnoredFiles(t *testing.T) {
	f := newFixture(t)
	writeFile(t, filepath.Join(f.ws, ".gitignore"), ".env\n")
	f.git(f.ws, "add", ".gitignore")
	f.git(f.ws, "commit", "--quiet", "-m", "ignore .env")
	env := filepath.Join(f.ws, ".env")
	writeFile(t, env, "TOKEN=user-secret\n")
	f.create("env", CreateOptions{})
	clone := f.repo.Project.Clone("env")
	writeFile(t, filepath.Join(clone, ".env"), "TOKEN=agent\n")
	f.git(clone, "add", "--force", ".env")
	f.git(clone, "-c", "user.name=agent", "-c", "user.email=agent@sandbox", "commit", "--quiet", "-m", "agent")
	f.collect("env")
	writeFile(t, filepath.Join(f.ws, "later.txt"), "the user's own work\n")
	f.git(f.ws, "add", "later.txt")
	f.git(f.ws, "commit", "--quiet", "-m", "later")

	d, err := f.repo.Diff(context.Background(), "env", false)
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	d.WriteText(&text)
	if !strings.Contains(text.String(), "✖ A .env  (execution-adjacent: Bun, pipenv, docker compose, Vite, Next.js, Flask (dotenv); replaces your .env, which git ignores: merge would overwrite it)") {
		t.Errorf("abox diff does not mark .env:\n%s", text.String())
	}
	head := f.git(f.ws, "rev-parse", "HEAD")
	_, err = f.repo.Merge(context.Background(), "env", MergeOptions{})
	if !errors.Is(err, ErrFlagged) || !strings.Contains(err.Error(), ".env (replaces your .env, which git ignores") {
		t.Fatalf("Merge = %v, want a refusal naming .env", err)
	}
	f.hostUntouched(head)
	if data, _ := os.ReadFile(env); string(data) != "TOKEN=user-secret\n" {
		t.Fatalf("after a refused merge .env reads %q", data)
	}
	if _, err := f.repo.Merge(context.Background(), "env", MergeOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(env); string(data) != "TOKEN=agent\n" {
		t.Errorf("after a forced merge .env reads %q: the test does not show git overwriting it", data)
	}
}
