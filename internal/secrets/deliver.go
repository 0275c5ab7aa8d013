package secrets

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/aboxhq/abox/internal/catalog"
	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/statefs"
	"github.com/aboxhq/abox/internal/termtext"
)

// gatewayHeader opens every gateway secrets file. The gateway skips # lines.
const gatewayHeader = "# Written by abox for the MCP gateway: the secrets its servers declare. It is part of\n" +
	"# abox's secrets store; `abox gateway up` rewrites it. Do not edit, copy or commit it.\n"

// MissingError lists needs the store cannot satisfy.
type MissingError struct{ Needs []Need }

func (e *MissingError) Error() string {
	var parts []string
	for _, n := range e.Needs {
		parts = append(parts, fmt.Sprintf("%s (%s)", termtext.Line(n.Secret), n))
	}
	return "not in the secrets store: " + strings.Join(parts, ", ")
}

// GatewayFile renders the gateway's secrets file for needs ([GatewayNeeds]): one
// "<catalog secret name>=<delivered value>" line per distinct secret the store holds, sorted,
// which is the format docker/mcp-gateway reads with --secrets=<file>. The needs the store
// cannot satisfy come back as missing; the gateway would hand those servers <UNKNOWN>. With
// nothing to hold, data is nil: the gateway then gets no file.
func GatewayFile(ctx context.Context, st Store, needs []Need) (data []byte, missing []Need, err error) {
	if len(needs) == 0 {
		return nil, nil, nil
	}
	stored, err := st.List(ctx)
	if err != nil {
		return nil, nil, err
	}
	var buf bytes.Buffer
	buf.WriteString(gatewayHeader)
	n := 0
	for _, name := range Names(needs) {
		if !manifest.IsSecretName(name) || !contains(stored, name) {
			missing = append(missing, needsOf(needs, name)...)
			continue
		}
		v, err := deliver(ctx, st, name)
		if err != nil {
			return nil, nil, err
		}
		fmt.Fprintf(&buf, "%s=%s\n", name, v)
		n++
	}
	if n == 0 {
		return nil, missing, nil
	}
	return buf.Bytes(), missing, nil
}

// EnvFile renders the secrets attached to the agent (variable → secret) as docker env-file lines
// "VAR=<delivered value>", sorted by variable, for `docker create --env-file /dev/stdin`. A
// secret the store lacks is a [*MissingError]: the agent would start without it.
func EnvFile(ctx context.Context, st Store, attached map[string]string) ([]byte, error) {
	if len(attached) == 0 {
		return nil, nil
	}
	stored, err := st.List(ctx)
	if err != nil {
		return nil, err
	}
	vars := make([]string, 0, len(attached))
	for k := range attached {
		vars = append(vars, k)
	}
	sort.Strings(vars)
	var missing []Need
	var buf bytes.Buffer
	for _, k := range vars {
		name := attached[k]
		if !manifest.IsEnvName(k) || !contains(stored, name) {
			missing = append(missing, Need{Secret: name, Kind: UseEnv, By: k})
			continue
		}
		v, err := deliver(ctx, st, name)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&buf, "%s=%s\n", k, v)
	}
	if len(missing) > 0 {
		return nil, &MissingError{Needs: missing}
	}
	return buf.Bytes(), nil
}

// deliver returns what the store hands over for name, refusing a value edited in the store to
// hold a line break, which would add lines to the file it goes into.
func deliver(ctx context.Context, st Store, name string) ([]byte, error) {
	v, err := st.Deliver(ctx, name)
	if err != nil {
		return nil, err
	}
	if err := CheckValue(v); err != nil {
		return nil, fmt.Errorf("%s in the store: %w", name, err)
	}
	return v, nil
}

func needsOf(needs []Need, name string) []Need {
	var out []Need
	for _, n := range needs {
		if n.Secret == name {
			out = append(out, n)
		}
	}
	return out
}

// ScrubGatewayFiles removes name's line from every profile's gateway secrets file, so that
// `abox secrets rm` leaves no copy of the value on disk. A running gateway keeps what it read
// at its start until it is recreated.
func ScrubGatewayFiles(gatewaysDir, name string) error {
	profiles, err := gateway.Profiles(gatewaysDir)
	if err != nil {
		return err
	}
	for _, prof := range profiles {
		path := filepath.Join(gatewaysDir, prof, gateway.SecretsFile)
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading the %s gateway's secrets file: %w", prof, errors.Unwrap(err))
		}
		var kept bytes.Buffer
		for _, line := range bytes.SplitAfter(data, []byte("\n")) {
			if !bytes.HasPrefix(line, []byte(name+"=")) {
				kept.Write(line)
			}
		}
		if kept.Len() == len(data) {
			continue
		}
		if err := statefs.WriteFile(path, kept.Bytes(), statefs.PrivateMode); err != nil {
			return err
		}
	}
	return nil
}

// GatewayFileError is a gateway's secrets file that could not be rendered from the store.
type GatewayFileError struct {
	Profile string
	Err     error
}

func (e *GatewayFileError) Error() string {
	return fmt.Sprintf("rendering the %s gateway's secrets: %v", e.Profile, e.Err)
}
func (e *GatewayFileError) Unwrap() error { return e.Err }

// ForGateway renders the secrets file of the gateway serving u: the secrets its servers and
// remote servers declare, from the store open returns, and its salted digest (salt at saltPath)
// for the fingerprint. It writes nothing ([gateway.Manager.Up] does), and calls open, which asks
// the daemon which store the host has, only when some server declares a secret. A store that
// fails to render the file is a [*GatewayFileError].
func ForGateway(ctx context.Context, open func(context.Context) (Store, error), saltPath string, u *gateway.Union, cat *catalog.Catalog) (gateway.Secrets, error) {
	needs := GatewayNeeds(u, cat)
	if len(needs) == 0 {
		return gateway.Secrets{}, nil
	}
	st, err := open(ctx)
	if err != nil {
		return gateway.Secrets{}, err
	}
	data, missing, err := GatewayFile(ctx, st, needs)
	if err != nil {
		return gateway.Secrets{}, &GatewayFileError{Profile: u.Profile, Err: err}
	}
	out := gateway.Secrets{Data: data}
	for _, n := range missing {
		out.Missing = append(out.Missing, fmt.Sprintf("%s (%s)", n.Secret, n))
	}
	if len(data) > 0 {
		salt, err := LoadSalt(saltPath)
		if err != nil {
			return gateway.Secrets{}, err
		}
		out.Digest = NewDigester(salt, 0).Digest(data)
	}
	return out, nil
}
