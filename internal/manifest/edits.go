package manifest

import (
	"maps"
	"slices"

	"github.com/aboxhq/abox/internal/egress"
)

// The edits below are the ones abox's commands make to agentbox.yaml. Each changes only the
// fields it names, through the node tree, so every other field and comment survives; none
// validates (the caller re-reads the result with [Doc.Manifest], which does).

// Canon returns the canonical form of an egress entry ("Example.COM." is "example.com"), or s
// itself when s is not one.
func Canon(s string) string {
	if e, err := egress.Parse(s); err == nil {
		return e.String()
	}
	return s
}

// Missing returns the items of want that are not in have, without duplicates, in want's order.
// Egress entries compare in canonical form, so "Example.com" is not missing from [example.com].
func Missing(have, want []string) []string {
	seen := map[string]bool{}
	for _, h := range have {
		seen[Canon(h)] = true
	}
	var out []string
	for _, w := range want {
		if !seen[Canon(w)] {
			seen[Canon(w)] = true
			out = append(out, w)
		}
	}
	return out
}

// Union returns the items of every list, first occurrence first, as [Missing] compares them.
func Union(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, Missing(out, l)...)
	}
	return out
}

// canonSet returns the canonical forms of entries.
func canonSet(entries []string) map[string]bool {
	out := map[string]bool{}
	for _, h := range entries {
		out[Canon(h)] = true
	}
	return out
}

// removeCanon removes from the sequence at path the items whose canonical form is one of
// hosts', and returns them as they were written.
func (d *Doc) removeCanon(hosts []string, path ...string) []string {
	want := canonSet(hosts)
	return d.Remove(func(v string) bool { return want[Canon(v)] }, path...)
}

// appendMissing appends the items of want the sequence at path lacks, and returns them.
func (d *Doc) appendMissing(want []string, path ...string) ([]string, error) {
	add := Missing(d.Strings(path...), want)
	if len(add) == 0 {
		return nil, nil
	}
	return add, d.Append(add, path...)
}

// EgressIgnored returns the hosts (canonical entries) that egress_ignored holds.
func (d *Doc) EgressIgnored(hosts []string) []string {
	ignored := canonSet(d.Strings("egress_ignored"))
	var out []string
	for _, h := range hosts {
		if ignored[Canon(h)] {
			out = append(out, h)
		}
	}
	return out
}

// AllowEgress takes hosts out of egress_ignored and appends to egress those it lacks. It returns
// the hosts it appended; none when all were allowed already.
func (d *Doc) AllowEgress(hosts []string) ([]string, error) {
	d.removeCanon(hosts, "egress_ignored")
	return d.appendMissing(hosts, "egress")
}

// RemoveEgress removes hosts from egress and returns the entries it removed, as they were
// written. An emptied egress list goes with its key.
func (d *Doc) RemoveEgress(hosts []string) []string {
	return d.removeCanon(hosts, "egress")
}

// EgressRemoval is what [Doc.RemoveEgressHosts] did with the hosts it was asked to remove.
type EgressRemoval struct {
	Removed   []string // the entries removed, as they were written
	Mandatory []string // hosts in no entry that abox allows anyway (they stay allowed)
	Absent    []string // hosts in no entry and not mandatory
}

// RemoveEgressHosts removes hosts (canonical entries) from egress, as [Doc.RemoveEgress] does,
// and sorts those it did not find: mandatory reports a host abox adds to every allowlist
// itself, which removing it from the manifest cannot take away.
func (d *Doc) RemoveEgressHosts(hosts []string, mandatory func(string) bool) EgressRemoval {
	r := EgressRemoval{Removed: d.RemoveEgress(hosts)}
	gone := canonSet(r.Removed)
	for _, h := range hosts {
		switch {
		case gone[Canon(h)]:
		case mandatory(h):
			r.Mandatory = append(r.Mandatory, h)
		default:
			r.Absent = append(r.Absent, h)
		}
	}
	return r
}

// IgnoreEgressHosts records in egress_ignored, as [Doc.IgnoreEgress] does, the hosts that are
// not mandatory, and returns them; it returns the mandatory ones apart, untouched: abox allows
// them in every sandbox, so an ignore decision against them would be a lie.
func (d *Doc) IgnoreEgressHosts(hosts []string, mandatory func(string) bool) (ignored, kept []string, err error) {
	for _, h := range hosts {
		if mandatory(h) {
			kept = append(kept, h)
		} else {
			ignored = append(ignored, h)
		}
	}
	if len(ignored) > 0 {
		err = d.IgnoreEgress(ignored)
	}
	return ignored, kept, err
}

// IgnoreEgress records hosts in egress_ignored, a decision against them, and takes them out of
// egress: an ignored host is blocked.
func (d *Doc) IgnoreEgress(hosts []string) error {
	d.removeCanon(hosts, "egress")
	_, err := d.appendMissing(hosts, "egress_ignored")
	return err
}

// UnignoreEgress forgets the ignore decisions on hosts and returns the entries it removed.
func (d *Doc) UnignoreEgress(hosts []string) []string {
	return d.removeCanon(hosts, "egress_ignored")
}

// DeclareServer adds server to servers unless it is there, and, when tools is not empty,
// narrows it to them (see [Doc.NarrowServer]).
func (d *Doc) DeclareServer(server string, tools []string) error {
	if !slices.Contains(d.Strings("servers"), server) {
		if err := d.Append([]string{server}, "servers"); err != nil {
			return err
		}
	}
	if len(tools) == 0 {
		return nil
	}
	return d.NarrowServer(server, tools)
}

// NarrowServer sets the tools of server, replacing any narrowing it had.
func (d *Doc) NarrowServer(server string, tools []string) error {
	return d.Set(tools, "tools", server)
}

// UndeclareServer removes server from servers with its per-server entries (see
// [Doc.RemoveRemoteServer]).
func (d *Doc) UndeclareServer(server string) {
	d.Remove(func(s string) bool { return s == server }, "servers")
	d.dropServerEntries(server)
}

// dropServerEntries removes the per-server entries of server, its narrowing and its network,
// so that no entry is left naming a server the manifest no longer declares: validation refuses
// such orphans. (The original abox crashed here: it removed the server first, and validation
// then refused what was left.)
func (d *Doc) dropServerEntries(server string) {
	for _, key := range []string{"tools", "server_network"} {
		d.Delete(key, server)
		d.DeleteIfEmpty(key)
	}
}

// SetRemoteServer declares the remote server name, replacing any it had under that name.
func (d *Doc) SetRemoteServer(name string, r RemoteServer) error {
	return d.Set(r, "remote_servers", name)
}

// RemoveRemoteServer removes the remote server name with its per-server entries; an emptied
// remote_servers goes too.
func (d *Doc) RemoveRemoteServer(name string) {
	d.Delete("remote_servers", name)
	d.DeleteIfEmpty("remote_servers")
	d.dropServerEntries(name)
}

// AttachSecret records env_secrets[env] = secret: the agent gets the stored secret in env.
func (d *Doc) AttachSecret(env, secret string) error {
	return d.Set(secret, "env_secrets", env)
}

// DetachSecrets removes envs from env_secrets; an emptied env_secrets goes too.
func (d *Doc) DetachSecrets(envs ...string) {
	for _, env := range envs {
		d.Delete("env_secrets", env)
	}
	d.DeleteIfEmpty("env_secrets")
}

// Merge folds want into the document, as `abox init` does when a manifest exists: project,
// profile and run.permission_mode are set where want's differ (an empty one changes nothing);
// the items of want's servers, toolchains, egress, mounts.mask and mounts.context the document
// lacks are appended; and every server of want.Tools gets that narrowing. Nothing is removed,
// and every other field is left alone. A document that is not a valid manifest is refused.
func (d *Doc) Merge(want *Manifest) error {
	have, err := d.Manifest(FileName)
	if err != nil {
		return err
	}
	sets := []struct {
		path      []string
		old, next string
	}{
		{[]string{"project"}, have.Project, want.Project},
		{[]string{"profile"}, have.Profile, want.Profile},
		{[]string{"run", "permission_mode"}, have.Run.PermissionMode, want.Run.PermissionMode},
	}
	for _, s := range sets {
		if s.next != "" && s.old != s.next {
			if err := d.Set(s.next, s.path...); err != nil {
				return err
			}
		}
	}
	lists := []struct {
		have, want []string
		path       []string
	}{
		{have.Servers, want.Servers, []string{"servers"}},
		{have.Toolchains, want.Toolchains, []string{"toolchains"}},
		{have.Egress, want.Egress, []string{"egress"}},
		{have.Mounts.Mask, want.Mounts.Mask, []string{"mounts", "mask"}},
		{have.Mounts.Context, want.Mounts.Context, []string{"mounts", "context"}},
	}
	for _, l := range lists {
		if add := Missing(l.have, l.want); len(add) > 0 {
			if err := d.Append(add, l.path...); err != nil {
				return err
			}
		}
	}
	for _, server := range slices.Sorted(maps.Keys(want.Tools)) {
		if err := d.NarrowServer(server, want.Tools[server]); err != nil {
			return err
		}
	}
	return nil
}
