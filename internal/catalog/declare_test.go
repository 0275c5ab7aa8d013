package catalog

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/manifest"
)

func TestDeclarable(t *testing.T) {
	c := &Catalog{entries: map[string]Entry{
		"github": {Name: "github", Tools: []string{"get_issue", "search_code"}},
		"quiet":  {Name: "quiet"}, // documents no tools
	}}
	m := &manifest.Manifest{Servers: []string{"github"}}
	tests := []struct {
		name, server string
		tools        []string
		want         Declaration // Entry compared by name
		wantErr      any
	}{
		{"new, all tools", "quiet", nil, Declaration{}, nil},
		{"declared, nothing asked", "github", nil, Declaration{Already: true}, nil},
		{"declared, narrowed again", "github", []string{"get_issue"}, Declaration{}, nil},
		{"unlisted tools said", "github", []string{"get_issue", "delete_repo", "fork"}, Declaration{Unlisted: []string{"delete_repo", "fork"}}, nil},
		{"entry without tools takes any", "quiet", []string{"anything"}, Declaration{}, nil},
		{"unknown", "nope", nil, Declaration{}, new(*UnknownServerError)},
		{"bad name", "a b", nil, Declaration{}, new(*BadNameError)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := c.Declarable(m, tc.server, tc.tools)
			if tc.wantErr != nil {
				if err == nil || !errors.As(err, tc.wantErr) {
					t.Fatalf("Declarable(%q) = %+v, %v; want a %T", tc.server, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got.Entry.Name != tc.server {
				t.Fatalf("Declarable(%q) = %+v, %v", tc.server, got, err)
			}
			got.Entry = Entry{}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Declarable(%q, %q) mismatch (-want +got):\n%s", tc.server, tc.tools, diff)
			}
		})
	}
}
