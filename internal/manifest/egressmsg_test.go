package manifest

import "testing"

func TestEgressMessages(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{AllowedMessage([]string{"a.example"}, nil), "already allowed: a.example"},
		{AllowedMessage([]string{"a.example", "b.example"}, []string{"b.example"}), "allowed: b.example"},
		{EgressRemoval{Removed: []string{"a.example"}, Mandatory: []string{"m.example"}, Absent: []string{"x.example"}}.Message(),
			"removed: a.example\nkept: m.example (mandatory: abox adds it to every allowlist; see defaults.egress_mandatory in config.yaml)\nnot in the allowlist: x.example"},
		{EgressRemoval{}.Message(), ""},
		{IgnoredMessage([]string{"a.example"}, []string{"m.example"}),
			"ignored: a.example (still blocked, no longer in the review queue)\nnot ignored: m.example (mandatory: abox allows it in every sandbox; see defaults.egress_mandatory in config.yaml)"},
		{UnignoredMessage([]string{"a.example"}, nil), "not ignored: a.example"},
		{UnignoredMessage([]string{"a.example"}, []string{"a.example"}), "unignored: a.example (blocked, and back in the review queue when seen)"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
