package manifest

import "strings"

// The messages of `abox egress add/rm/ignore/unignore`: what each edit of the document did,
// one line per kind of outcome.

// AllowedMessage reports [Doc.AllowEgress] of hosts, which added add.
func AllowedMessage(hosts, add []string) string {
	if len(add) == 0 {
		return "already allowed: " + strings.Join(hosts, ", ")
	}
	return "allowed: " + strings.Join(add, ", ")
}

// Message reports the removal.
func (r EgressRemoval) Message() string {
	var msgs []string
	if len(r.Removed) > 0 {
		msgs = append(msgs, "removed: "+strings.Join(r.Removed, ", "))
	}
	if len(r.Mandatory) > 0 {
		msgs = append(msgs, "kept: "+strings.Join(r.Mandatory, ", ")+" (mandatory: abox adds it to every allowlist; see defaults.egress_mandatory in config.yaml)")
	}
	if len(r.Absent) > 0 {
		msgs = append(msgs, "not in the allowlist: "+strings.Join(r.Absent, ", "))
	}
	return strings.Join(msgs, "\n")
}

// IgnoredMessage reports [Doc.IgnoreEgressHosts], which ignored ignored and kept the
// mandatory hosts kept.
func IgnoredMessage(ignored, kept []string) string {
	var msgs []string
	if len(ignored) > 0 {
		msgs = append(msgs, "ignored: "+strings.Join(ignored, ", ")+" (still blocked, no longer in the review queue)")
	}
	if len(kept) > 0 {
		msgs = append(msgs, "not ignored: "+strings.Join(kept, ", ")+" (mandatory: abox allows it in every sandbox; see defaults.egress_mandatory in config.yaml)")
	}
	return strings.Join(msgs, "\n")
}

// UnignoredMessage reports [Doc.UnignoreEgress] of hosts, which removed removed.
func UnignoredMessage(hosts, removed []string) string {
	if len(removed) == 0 {
		return "not ignored: " + strings.Join(hosts, ", ")
	}
	return "unignored: " + strings.Join(removed, ", ") + " (blocked, and back in the review queue when seen)"
}
