package deps

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// goCmd runs the go command with the given extra environment and returns its stdout.
func goCmd(t *testing.T, env []string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out
}

// readList reads one of the checked-in lists: one module a line, then optionally its reason;
// blank lines and lines starting with # are comments. It returns module → reason.
func readList(t *testing.T, name string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		mod, reason, _ := strings.Cut(line, " ")
		if _, dup := out[mod]; dup {
			t.Errorf("%s:%d: %s is listed twice", name, i+1, mod)
		}
		out[mod] = strings.TrimSpace(reason)
	}
	return out
}

// compareSets reports what got has that want lacks and the reverse.
func compareSets(got, want map[string]string) (added, removed []string) {
	for _, m := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[m]; !ok {
			added = append(added, m)
		}
	}
	for _, m := range slices.Sorted(maps.Keys(want)) {
		if _, ok := got[m]; !ok {
			removed = append(removed, m)
		}
	}
	return added, removed
}

// TestDirectDeps fails when go.mod's direct requirements differ from direct.txt, or when an
// entry of direct.txt has no reason.
func TestDirectDeps(t *testing.T) {
	var mod struct {
		Require []struct {
			Path     string
			Indirect bool
		}
	}
	// go mod edit -json parses go.mod as the go command does, without touching the network.
	if err := json.Unmarshal(goCmd(t, nil, "mod", "edit", "-json"), &mod); err != nil {
		t.Fatalf("decoding go mod edit -json: %v", err)
	}
	got := map[string]string{}
	for _, r := range mod.Require {
		if !r.Indirect {
			got[r.Path] = ""
		}
	}
	want := readList(t, "direct.txt")
	added, removed := compareSets(got, want)
	for _, m := range added {
		t.Errorf("go.mod requires %s directly, but direct.txt does not list it: add it there with a one-line reason, "+
			"or drop the requirement", m)
	}
	for _, m := range removed {
		t.Errorf("direct.txt lists %s, which go.mod no longer requires directly: remove it from direct.txt", m)
	}
	for _, m := range slices.Sorted(maps.Keys(want)) {
		if want[m] == "" {
			t.Errorf("direct.txt lists %s without a reason", m)
		}
	}
}

// TestBinaryModules fails when the modules linked into the abox binary differ from binary.txt.
// The list is computed for linux/amd64, the platform of netd's image, so it does not depend on
// the host that runs the test (huh's terminal code differs by GOOS).
func TestBinaryModules(t *testing.T) {
	out := goCmd(t, []string{"GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=0"},
		"list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", module+"/cmd/abox")
	got := map[string]string{}
	for _, m := range strings.Fields(string(out)) {
		if m != module {
			got[m] = ""
		}
	}
	added, removed := compareSets(got, readList(t, "binary.txt"))
	for _, m := range added {
		t.Errorf("the abox binary (and so netd) now links %s: add it to binary.txt once you know what brings it "+
			"(`go mod why -m %s`) and why that is worth it", m, m)
	}
	for _, m := range removed {
		t.Errorf("binary.txt lists %s, which the abox binary no longer links: remove it", m)
	}
}
