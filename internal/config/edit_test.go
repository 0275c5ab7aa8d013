package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	oldImage = "docker/mcp-gateway@sha256:1111111111111111111111111111111111111111111111111111111111111111"
	newImage = "docker/mcp-gateway@sha256:2222222222222222222222222222222222222222222222222222222222222222"
)

// handWritten is a config.yaml as a person keeps it: comments, an order of their own.
const handWritten = `# my network, keep this comment
network: lab-net
gateway:
  # pinned on Monday
  image: ` + oldImage + ` # the old one
profiles:
  default:
    port: 8811 # the usual
`

func writeConfig(t *testing.T, data string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestEditFile compares each edited file with the whole file written out by hand.
func TestEditFile(t *testing.T) {
	tests := []struct {
		name string
		in   string
		edit func(*Doc) error
		want string
	}{
		{
			name: "pin the gateway image, keeping every comment",
			in:   handWritten,
			edit: func(d *Doc) error { return d.SetGatewayImage(newImage) },
			want: `# my network, keep this comment
network: lab-net
gateway:
  # pinned on Monday
  image: ` + newImage + ` # the old one
profiles:
  default:
    port: 8811 # the usual
`,
		},
		{
			name: "pin creates the gateway mapping",
			in:   "# mine\nnetwork: lab-net\n",
			edit: func(d *Doc) error { return d.SetGatewayImage(newImage) },
			want: "# mine\nnetwork: lab-net\ngateway:\n  image: " + newImage + "\n",
		},
		{
			name: "pin fills a null gateway",
			in:   "gateway: # set later\nnetwork: lab-net\n",
			edit: func(d *Doc) error { return d.SetGatewayImage(newImage) },
			want: "gateway: # set later\n  image: " + newImage + "\nnetwork: lab-net\n",
		},
		{
			name: "add a profile beside the file's own",
			in:   handWritten,
			edit: func(d *Doc) error { return d.SetProfile("work", Profile{Port: 8812}) },
			want: `# my network, keep this comment
network: lab-net
gateway:
  # pinned on Monday
  image: ` + oldImage + ` # the old one
profiles:
  default:
    port: 8811 # the usual
  work:
    port: 8812
`,
		},
		{
			name: "adding a profile to a file without profiles keeps the default one",
			in:   "# mine\nnetwork: lab-net\n",
			edit: func(d *Doc) error { return d.SetProfile("work", Profile{Port: 8812, Description: "client work"}) },
			want: `# mine
network: lab-net
profiles:
  default:
    port: 8811
  work:
    port: 8812
    description: client work
`,
		},
		{
			name: "inject a credential, keeping claude_code's comments",
			in:   "# mine\nclaude_code:\n  source: npm # from the registry\n  version: 2.1.0\n",
			edit: func(d *Doc) error { return d.SetCredential("claude-key") },
			want: "# mine\nclaude_code:\n  source: npm # from the registry\n  version: 2.1.0\n  credential: claude-key\n",
		},
		{
			name: "inject a credential into a file without claude_code",
			in:   "# mine\nnetwork: lab-net\n",
			edit: func(d *Doc) error { return d.SetCredential("claude-key") },
			want: "# mine\nnetwork: lab-net\nclaude_code:\n  credential: claude-key\n",
		},
		{
			name: "back to the login volume: credential, api_upstream and server_tools go, the rest stays",
			in:   "claude_code:\n  source: npm # mine\n  credential: old-key\n  api_upstream: https://llm.example.com\n  server_tools: allow\n  version: 2.1.0\n",
			edit: func(d *Doc) error {
				if !d.ClearCredential() {
					return errors.New("ClearCredential found nothing to remove")
				}
				return nil
			},
			want: "claude_code:\n  source: npm # mine\n  version: 2.1.0\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := writeConfig(t, tc.in)
			c, err := EditFile(path, Default(), tc.edit)
			if err != nil {
				t.Fatalf("EditFile() error = %v", err)
			}
			got, _ := os.ReadFile(path)
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("config.yaml mismatch (-want +got):\n%s", diff)
			}
			if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
				t.Errorf("config.yaml mode = %v, want 0600", fi.Mode().Perm())
			}
			if reread, err := Load(path); err != nil || !cmp.Equal(c, reread) {
				t.Errorf("EditFile returned a config other than the one it wrote (reread err %v):\n%s", err, cmp.Diff(reread, c))
			}
		})
	}
}

func TestEditFileWithoutAFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	c, err := EditFile(path, Default(), func(d *Doc) error { return d.SetGatewayImage(newImage) })
	if err != nil {
		t.Fatalf("EditFile() error = %v", err)
	}
	if c.Gateway.Image != newImage {
		t.Errorf("Gateway.Image = %q, want %q", c.Gateway.Image, newImage)
	}
	got, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(got), "# abox global configuration. Unknown keys are refused.\n") ||
		!strings.Contains(string(got), "\ngateway:\n  image: "+newImage+"\n") {
		t.Errorf("config.yaml is not the defaults with the new image:\n%s", got)
	}
	want := Default()
	want.Gateway.Image = newImage
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("EditFile() changed more than the image (-want +got):\n%s", diff)
	}
}

// TestEditFileWritesNothingOnError: a failed edit, an invalid result or an unreadable file
// leaves config.yaml byte for byte as it was, and no temporary file behind.
func TestEditFileWritesNothingOnError(t *testing.T) {
	errEdit := errors.New("edit failed")
	tests := []struct {
		name    string
		in      *string // nil: no file
		edit    func(*Doc) error
		wantErr string
	}{
		{"the edit fails", ptr(handWritten), func(d *Doc) error {
			if err := d.SetGatewayImage(newImage); err != nil {
				return err
			}
			return errEdit
		}, "edit failed"},
		{"the result is invalid", ptr(handWritten), func(d *Doc) error { return d.SetGatewayImage("docker/mcp-gateway:latest") }, "gateway.image"},
		{"the file is not YAML", ptr("gateway: [\n"), func(d *Doc) error { return d.SetGatewayImage(newImage) }, "reading"},
		{"the file is not a mapping", ptr("- a\n- b\n"), func(d *Doc) error { return d.SetGatewayImage(newImage) }, "not a YAML mapping"},
		{"gateway is not a mapping", ptr("gateway: [a]\n"), func(d *Doc) error { return d.SetGatewayImage(newImage) }, "gateway is not a mapping"},
		{"no file, and the result is invalid", nil, func(d *Doc) error { return d.SetProfile("work", Profile{Port: 8811}) }, "port"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "config.yaml")
			if tc.in != nil {
				if err := os.WriteFile(path, []byte(*tc.in), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			_, err := EditFile(path, Default(), tc.edit)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("EditFile() error = %v, want one containing %q", err, tc.wantErr)
			}
			got, readErr := os.ReadFile(path)
			switch {
			case tc.in == nil && readErr == nil:
				t.Errorf("a failed edit created config.yaml:\n%s", got)
			case tc.in != nil && string(got) != *tc.in:
				t.Errorf("a failed edit changed config.yaml:\n%s", cmp.Diff(*tc.in, string(got)))
			}
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if e.Name() != "config.yaml" {
					t.Errorf("a failed edit left %s behind", e.Name())
				}
			}
		})
	}
}

func ptr(s string) *string { return &s }
