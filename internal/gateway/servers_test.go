package gateway

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/docker/dockertest"
)

// world is what the fake docker answers `ps` and `container inspect` from.
type world struct {
	containers []fakeContainer
}

type fakeContainer struct {
	id, name string
	labels   map[string]string
	network  string
	created  string
	running  bool
	args     []string
}

var t0 = time.Date(2026, 12, 7, 20, 0, 0, 0, time.UTC)

func at(d time.Duration) string { return t0.Add(d).Format(time.RFC3339Nano) }

// answer registers the world's replies to ps (by label filters, --all or not) and inspect.
func (w *world) answer(fake *dockertest.Fake) {
	fake.OnFunc("ps", func(inv docker.Invocation) (docker.Result, error) {
		all := slices.Contains(inv.Args, "--all")
		var out strings.Builder
		for _, c := range w.containers {
			if !all && !c.running {
				continue
			}
			if !matchFilters(inv.Args, c.labels) {
				continue
			}
			var ls []string
			for k, v := range c.labels {
				ls = append(ls, k+"="+v)
			}
			line, _ := json.Marshal(map[string]string{"ID": c.id, "Names": c.name, "Labels": strings.Join(ls, ",")})
			out.Write(append(line, '\n'))
		}
		return docker.Result{Stdout: []byte(out.String())}, nil
	}).Optional()
	fake.OnFunc("container inspect", func(inv docker.Invocation) (docker.Result, error) {
		id := inv.Args[len(inv.Args)-1]
		for _, c := range w.containers {
			if c.id == id {
				b, _ := json.Marshal(map[string]any{"Id": c.id, "Name": "/" + c.name, "Created": c.created, "Args": c.args,
					"Config":          map[string]any{"Labels": c.labels},
					"NetworkSettings": map[string]any{"Networks": map[string]any{c.network: map[string]any{}}}})
				return docker.Result{Stdout: b}, nil
			}
		}
		return docker.Result{ExitCode: 1, Stderr: []byte("Error: No such container: " + id + "\n")}, nil
	}).Optional()
}

func matchFilters(args []string, labels map[string]string) bool {
	for i, a := range args {
		if a != "--filter" || i+1 == len(args) {
			continue
		}
		k, v, hasV := strings.Cut(strings.TrimPrefix(args[i+1], "label="), "=")
		got, ok := labels[k]
		if !ok || hasV && got != v {
			return false
		}
	}
	return true
}

func server(id, name string, created time.Duration, network string) fakeContainer {
	return fakeContainer{id: id, name: "sharp_" + id, network: network, created: at(created), running: true,
		labels: map[string]string{ServerLabel: "true", ServerNameLabel: name}}
}

func netd(id string, created time.Duration) fakeContainer {
	return fakeContainer{id: id, name: "abox-netd-" + id, network: "abox-net", created: at(created), running: true,
		labels: map[string]string{"abox.managed": "true", "abox.role": "netd"}}
}

// TestOrphanServers: a server container created before every running netd belongs to a run
// that is over; one created after some running netd started may be a live run's and is kept;
// with no netd running every one is an orphan. Containers on other networks, and one gone
// between the listing and its inspection, are left out; a netd on another network, which
// reaches none of this network's gateways, protects nothing.
func TestOrphanServers(t *testing.T) {
	w := &world{containers: []fakeContainer{
		server("s-old", "everything", 0, "abox-net"),
		server("s-new", "everything", 20*time.Second, "abox-net"),
		server("s-elsewhere", "fetch", 0, "other-net"),
		netd("n-live", 10*time.Second),
		{id: "n-elsewhere", name: "abox-netd-y", network: "other-net", created: at(-time.Hour), running: true,
			labels: map[string]string{"abox.managed": "true", "abox.role": "netd"}},
		{id: "n-exited", name: "abox-netd-x", network: "abox-net", created: at(-time.Hour),
			labels: map[string]string{"abox.managed": "true", "abox.role": "netd"}},
	}}
	fake := dockertest.New(t)
	w.answer(fake)
	sv := Servers{Docker: docker.NewClient(fake, nil), Network: "abox-net"}
	got, err := sv.Orphans(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []ServerContainer{{ID: "s-old", Name: "sharp_s-old", Server: "everything", Created: t0}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("with a netd running since 10 s (-want +got):\n%s", diff)
	}

	w.containers = slices.DeleteFunc(w.containers, func(c fakeContainer) bool { return c.id == "n-live" })
	got, err = sv.Orphans(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if ids := serverIDs(got); !slices.Equal(ids, []string{"s-old", "s-new"}) {
		t.Errorf("with no netd running: %v, want both server containers on abox-net", ids)
	}
}

// TestOrphanServersUnreadableTime: a creation time that does not parse is an error, not a
// container taken for old (or for new).
func TestOrphanServersUnreadableTime(t *testing.T) {
	s := server("s1", "everything", 0, "abox-net")
	s.created = "yesterday"
	w := &world{containers: []fakeContainer{s}}
	fake := dockertest.New(t)
	w.answer(fake)
	if got, err := (Servers{Docker: docker.NewClient(fake, nil), Network: "abox-net"}).Orphans(context.Background()); err == nil {
		t.Errorf("OrphanServers = %v, want an error", got)
	}
}

// TestSweepServersWaitsForStartingGateways: the sweep looks only once it holds the lock of every
// configured profile, so a gateway starting under its lock (listing its servers through
// containers of its own), running yet or not, loses none of them; then it removes the orphans.
func TestSweepServersWaitsForStartingGateways(t *testing.T) {
	w := &world{containers: []fakeContainer{
		server("s-old", "everything", 0, "abox-net"),
	}}
	fake := dockertest.New(t)
	removed := make(chan []string, 1)
	fake.OnFunc("rm", func(inv docker.Invocation) (docker.Result, error) {
		removed <- inv.Args
		return docker.Result{}, nil
	})
	w.answer(fake)
	dir := t.TempDir()
	unlock, err := LockProfile(dir + "/dev")
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		got []ServerContainer
		err error
	}
	done := make(chan result, 1)
	go func() {
		sv := Servers{Docker: docker.NewClient(fake, nil), Network: "abox-net"}
		got, err := sv.Sweep(context.Background(), dir, []string{"prod", "dev"})
		done <- result{got, err}
	}()
	select {
	case args := <-removed:
		t.Fatalf("the sweep removed %v while the profile's gateway was starting", args)
	case <-time.After(300 * time.Millisecond):
	}
	unlock()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if args := <-removed; !slices.Equal(args, []string{"rm", "--force", "s-old"}) {
		t.Errorf("removed with %q", args)
	}
	if ids := serverIDs(r.got); !slices.Equal(ids, []string{"s-old"}) {
		t.Errorf("SweepServers = %v", ids)
	}
}

func serverIDs(l []ServerContainer) []string {
	var ids []string
	for _, s := range l {
		ids = append(ids, s.ID)
	}
	return ids
}

// TestOrphanServersIdleSpare: a spare netd no run has claimed opens no session: however old, it
// protects nothing (with defaults.spare_netd, one idling for a week would otherwise keep every
// container lost since). The idle list is read after the containers are listed.
func TestOrphanServersIdleSpare(t *testing.T) {
	w := &world{containers: []fakeContainer{
		netd("spare-b", -7*24*time.Hour),
		server("s-lost", "everything", 0, "abox-net"),
	}}
	fake := dockertest.New(t)
	w.answer(fake)
	sv := Servers{Docker: docker.NewClient(fake, nil), Network: "abox-net",
		Idle: func() ([]string, error) { return []string{"abox-netd-spare-b"}, nil }}
	got, err := sv.Orphans(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if ids := serverIDs(got); !slices.Equal(ids, []string{"s-lost"}) {
		t.Errorf("Orphans = %v, want the lost container: the idle spare serves no run", ids)
	}
	sv.Idle = nil // claimed: it counts from its creation
	if got, _ := sv.Orphans(context.Background()); len(got) != 0 {
		t.Errorf("Orphans = %v with the spare claimed by a run, want none", serverIDs(got))
	}
}

// TestOrphanServersWithoutNetwork: a server_network: none server's container has no network;
// it is this network's when one of the network's gateways serves its server, and swept as any.
func TestOrphanServersWithoutNetwork(t *testing.T) {
	w := &world{containers: []fakeContainer{
		server("s-offline", "notes", 0, "none"),
		server("s-foreign", "other", 0, "none"), // no gateway of abox-net serves it
		{id: "gw", name: "abox-gw-dev", network: "abox-net", created: at(-time.Hour), running: true,
			args:   []string{"--servers=everything,notes"},
			labels: map[string]string{"abox.managed": "true", "abox.role": "gateway", "abox.profile": "dev"}},
	}}
	fake := dockertest.New(t)
	w.answer(fake)
	got, err := (Servers{Docker: docker.NewClient(fake, nil), Network: "abox-net"}).Orphans(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if ids := serverIDs(got); !slices.Equal(ids, []string{"s-offline"}) {
		t.Errorf("Orphans = %v, want the container of notes, which the network's gateway serves", ids)
	}
}

// TestSweepServersGivesUpAtItsDeadline: a profile's lock held past the sweep's deadline (a
// gateway slow to start) ends the sweep with an error and nothing removed, rather than the
// sweep waiting for as long as the holder likes.
func TestSweepServersGivesUpAtItsDeadline(t *testing.T) {
	w := &world{containers: []fakeContainer{server("s-old", "everything", 0, "abox-net")}}
	fake := dockertest.New(t)
	w.answer(fake)
	dir := t.TempDir()
	unlock, err := LockProfile(dir + "/dev")
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := (Servers{Docker: docker.NewClient(fake, nil), Network: "abox-net"}).Sweep(ctx, dir, []string{"dev"})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "being started") {
			t.Errorf("Sweep = %v, want the busy profile named", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the sweep still waits for the lock 10 s on, past its 200 ms deadline")
	}
}
