package gateway

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/statefs"
)

// Manager starts, inspects and removes gateways through the docker CLI.
type Manager struct {
	Docker *docker.Client
	// Progress receives one line per step (pull, create, recreate); nil discards them.
	Progress func(format string, args ...any)
	// Sleep waits between probe attempts; nil waits for real. Tests make it instant.
	Sleep func(context.Context, time.Duration) error
	// Now dates the record of a proven token check; nil is time.Now.
	Now func() time.Time
	// GatewaysDir is paths.Paths.GatewaysDir. [Manager.LogsTail] removes the values of the
	// profile's secrets file found there from the gateway's output; "" removes the token only.
	GatewaysDir string
}

// Actions [Manager.Up] reports.
const (
	Created   = "created"
	Kept      = "kept"
	Recreated = "recreated"
)

// UpOptions are the choices of one reconciliation.
type UpOptions struct {
	Force      bool
	Token      string
	ProbeImage string // the netd image, which holds abox; "" skips the health probe
}

// Outcome is what [Manager.Up] did.
type Outcome struct {
	Action  string
	Reasons []string     // why it was recreated
	Probe   *ProbeResult // nil when not probed
}

// Up makes the profile's gateway match the plan: gateway and server images present, catalog
// written, the container created or recreated when its fingerprint changed, it is stopped, or
// force is set (there is never a second one: the name is fixed), and then probed. Errors never
// hold the token.
func (m *Manager) Up(ctx context.Context, p *Plan, o UpOptions) (*Outcome, error) {
	out, err := m.up(ctx, p, o)
	if err != nil {
		return out, scrubErr(err, o.Token)
	}
	return out, nil
}

func (m *Manager) up(ctx context.Context, p *Plan, o UpOptions) (*Outcome, error) {
	if err := m.ensureImages(ctx, p); err != nil {
		return nil, err
	}
	if err := statefs.WriteFile(p.Container.CatalogFile, p.Catalog, statefs.PrivateMode); err != nil {
		return nil, err
	}
	if err := writeSecrets(p); err != nil {
		return nil, err
	}
	ct, err := m.inspect(ctx, p.Profile)
	if err != nil {
		return nil, err
	}
	out := &Outcome{Action: Kept}
	old, hasOld, err := LoadFingerprint(p.Dir)
	if err != nil {
		return nil, err
	}
	if ct == nil {
		out.Action = Created
	} else if reasons := staleness(ct, p, old, hasOld, o.Force); len(reasons) > 0 {
		out.Action, out.Reasons = Recreated, reasons
		m.progressf("recreating %s: %s", Name(p.Profile), strings.Join(reasons, ", "))
		if err := m.remove(ctx, p.Profile); err != nil {
			return nil, err
		}
	}
	if out.Action != Kept {
		if err := m.create(ctx, p, o.Token); err != nil {
			return nil, err
		}
	}
	if err := p.Fingerprint.Save(p.Dir); err != nil {
		return nil, err
	}
	if o.ProbeImage == "" {
		return out, nil
	}
	if out.Probe, err = m.probeUntilReady(ctx, p, o); err != nil {
		return out, err
	}
	ct, err = m.inspect(ctx, p.Profile)
	if err != nil || ct == nil {
		return out, err
	}
	return out, SaveAuthProof(p.Dir, ct, out.Probe.Auth, m.now())
}

// writeSecrets writes the plan's secrets file, 0600 in the profile's 0700 directory, or removes
// one that no server needs any more. A running gateway keeps the file it was started with (a
// bind mount holds the old inode), and a changed file changes the fingerprint, so the gateway
// is recreated with the new one.
func writeSecrets(p *Plan) error {
	path := filepath.Join(p.Dir, SecretsFile)
	if len(p.Secrets.Data) > 0 {
		return statefs.WriteFile(path, p.Secrets.Data, statefs.PrivateMode)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing the gateway secrets file: %w", err)
	}
	return nil
}

// staleness lists why the existing container ct does not match the plan; none means keep it.
func staleness(ct *docker.Container, p *Plan, old Fingerprint, hasOld, force bool) []string {
	switch {
	case force:
		return []string{"--force"}
	case !ct.State.Running:
		return []string{"it was " + ct.State.Status}
	case ct.Config.Labels["abox.fingerprint"] == p.Container.Fingerprint:
		return nil
	}
	if d := old.Diff(p.Fingerprint); hasOld && len(d) > 0 {
		return []string{"changed " + strings.Join(d, ", ")}
	}
	return []string{"its inputs changed"}
}

// inspect returns the profile's gateway container, or nil. A container of that name that abox
// did not create is an error: abox never removes what it does not own.
func (m *Manager) inspect(ctx context.Context, profile string) (*docker.Container, error) {
	ct, err := m.Docker.ContainerInspect(ctx, Name(profile))
	if errors.Is(err, docker.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if ct.Config.Labels["abox.managed"] != "true" || ct.Config.Labels["abox.role"] != "gateway" {
		return nil, fmt.Errorf("a container named %s exists that abox did not create", Name(profile))
	}
	return ct, nil
}

// ensureImages makes sure the gateway image and every server image are present: the gateway
// runs servers with --pull never and only logs a failed pull, so a missing image would be a
// server with no tools behind a healthy gateway.
func (m *Manager) ensureImages(ctx context.Context, p *Plan) error {
	if err := m.ensureImage(ctx, p.Container.Image, true, "the gateway image"); err != nil {
		return err
	}
	for _, img := range p.Images {
		if err := m.ensureImage(ctx, img.Ref, img.Pull, "the image of server "+img.Server); err != nil {
			return err
		}
	}
	return nil
}

// ImageMissingError is a local image (pin: false, or an image id) that is not present.
type ImageMissingError struct{ What, Ref string }

func (e *ImageMissingError) Error() string {
	return fmt.Sprintf("%s %s is not present, and abox does not pull local images", e.What, e.Ref)
}

func (m *Manager) ensureImage(ctx context.Context, ref string, pull bool, what string) error {
	ok, err := m.Docker.ImageExists(ctx, ref)
	if err != nil || ok {
		return err
	}
	if !pull || strings.HasPrefix(ref, "sha256:") {
		return &ImageMissingError{What: what, Ref: ref}
	}
	m.progressf("pulling %s", ref)
	if err := m.Docker.Pull(ctx, ref); err != nil {
		return fmt.Errorf("pulling %s: %w", what, err)
	}
	return nil
}

// create runs the container. The token goes through a 0600 env file in the profile's 0700
// state directory, removed as soon as `docker run` returns.
func (m *Manager) create(ctx context.Context, p *Plan, token string) error {
	f, err := os.CreateTemp(p.Dir, ".gateway-env-*")
	if err != nil {
		return fmt.Errorf("writing the gateway's environment: %w", err)
	}
	defer os.Remove(f.Name())
	_, werr := fmt.Fprintf(f, "%s=%s\n", TokenEnv, token)
	if err := errors.Join(werr, f.Chmod(statefs.PrivateMode), f.Close()); err != nil {
		return fmt.Errorf("writing the gateway's environment: %w", err)
	}
	m.progressf("starting %s on %s", Name(p.Profile), p.Container.Network)
	if _, err := m.Docker.RunDetached(ctx, p.Container.RunArgs(f.Name())); err != nil {
		return fmt.Errorf("starting the gateway: %w", err)
	}
	return nil
}

// Down stops and removes the profile's gateway, and its secrets file. It reports whether there
// was a gateway.
func (m *Manager) Down(ctx context.Context, profile string) (bool, error) {
	ct, err := m.inspect(ctx, profile)
	if err != nil {
		return false, err
	}
	if ct != nil {
		if err := m.remove(ctx, profile); err != nil {
			return true, err
		}
	}
	// The secrets file exists for the gateway to read; with no gateway it is only a copy of the
	// store's values, so it goes. `gateway up` writes it again.
	if m.GatewaysDir != "" {
		if err := os.Remove(filepath.Join(m.GatewaysDir, profile, SecretsFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return ct != nil, fmt.Errorf("removing the gateway secrets file: %w", err)
		}
	}
	return ct != nil, nil
}

// remove stops the gateway gracefully (it then stops the servers it started, which run with
// --rm), then removes it with its anonymous volume.
func (m *Manager) remove(ctx context.Context, profile string) error {
	if err := m.Docker.Stop(ctx, Name(profile), 10*time.Second); err != nil && !errors.Is(err, docker.ErrNotFound) {
		return fmt.Errorf("stopping the gateway: %w", err)
	}
	return m.Docker.Remove(ctx, true, true, Name(profile))
}

// Inspect returns the profile's gateway container, or nil when there is none.
func (m *Manager) Inspect(ctx context.Context, profile string) (*docker.Container, error) {
	return m.inspect(ctx, profile)
}

func (m *Manager) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

func (m *Manager) progressf(format string, args ...any) {
	if m.Progress != nil {
		m.Progress(format, args...)
	}
}

// LogsTail returns the last lines of the gateway's output for a person to read: the token and
// the values of the profile's secrets file removed, in case a server or the gateway logs one.
func (m *Manager) LogsTail(ctx context.Context, profile, token string, lines int) string {
	res, _ := m.Docker.Run(ctx, docker.Invocation{Args: []string{"logs", "--tail", fmt.Sprint(lines), Name(profile)}})
	text := string(res.Stdout) + string(res.Stderr)
	for _, v := range m.secretValues(profile) {
		text = strings.ReplaceAll(text, v, "«redacted»")
	}
	return Redact(text, token)
}

// minRedacted is the shortest value LogsTail removes: shorter ones would mangle every line and
// protect nothing a guess would not find.
const minRedacted = 4

// secretValues returns the values of the profile's secrets file, longest first, so that a value
// containing another is removed whole.
func (m *Manager) secretValues(profile string) []string {
	if m.GatewaysDir == "" {
		return nil
	}
	data, err := os.ReadFile(filepath.Join(m.GatewaysDir, profile, SecretsFile))
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if _, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") && len(v) >= minRedacted {
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// CatalogPath is the union catalog's host path for the profile state directory dir.
func CatalogPath(dir string) string { return filepath.Join(dir, CatalogFile) }
