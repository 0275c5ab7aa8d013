package netd

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// checkUnprivileged refuses a serving child that holds anything worth taking: the child faces
// the agent. status is the text of the child's /proc/<pid>/status and uid the uid it was started
// as. Every uid and gid must be that unprivileged id, the child has no supplementary group, its
// inheritable, permitted, effective and ambient capability sets are empty, and no_new_privs is
// set. The bounding set is not empty (emptying it needs CAP_SETPCAP, which netd does not hold),
// but with no_new_privs no execve can raise a capability from it: neither a setuid binary nor
// file capabilities take effect.
//
// The supervisor runs it on the child it started, before the child sees the policy or the
// token; the child also runs it on itself before it listens.
func checkUnprivileged(status string, uid int) error {
	if uid == 0 {
		return errors.New("the serving child is to run as root")
	}
	fields := map[string]string{}
	for _, line := range strings.Split(status, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			fields[k] = strings.TrimSpace(v)
		}
	}
	want := strconv.Itoa(uid)
	for _, k := range []string{"Uid", "Gid"} {
		ids := strings.Fields(fields[k])
		if len(ids) != 4 {
			return fmt.Errorf("the serving child's status has no %s line", k)
		}
		for _, id := range ids {
			if id != want {
				return fmt.Errorf("the serving child runs with %s %s, want %s", k, fields[k], want)
			}
		}
	}
	if g := fields["Groups"]; g != "" {
		return fmt.Errorf("the serving child has supplementary groups: %s", g)
	}
	for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapAmb"} {
		v, ok := fields[k]
		if !ok || v == "" {
			return fmt.Errorf("the serving child's status has no %s line", k)
		}
		if strings.Trim(v, "0") != "" {
			return fmt.Errorf("the serving child holds capabilities: %s %s", k, v)
		}
	}
	if fields["NoNewPrivs"] != "1" {
		return fmt.Errorf("the serving child may gain privileges on execve (NoNewPrivs %q)", fields["NoNewPrivs"])
	}
	return nil
}

// checkChild reads the serving child's status under proc (/proc) and checks it.
func checkChild(proc string, pid, uid int) error {
	b, err := os.ReadFile(filepath.Join(proc, strconv.Itoa(pid), "status"))
	if err != nil {
		return fmt.Errorf("checking the serving child: %w", err)
	}
	return checkUnprivileged(string(b), uid)
}
