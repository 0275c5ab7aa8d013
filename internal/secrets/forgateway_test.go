package secrets

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/gateway"
)

// TestForGateway: a gateway whose servers declare no secret never asks for the store; one that
// does gets the file, a salted digest that changes with a value, and the missing secrets named;
// the store's failures come back, a rendering failure as a GatewayFileError.
func TestForGateway(t *testing.T) {
	ctx := context.Background()
	cat := testCat(t)
	salt := filepath.Join(t.TempDir(), "secrets.salt")
	never := func(context.Context) (Store, error) {
		t.Error("the store was opened for a gateway that needs no secret")
		return nil, nil
	}
	if out, err := ForGateway(ctx, never, salt, &gateway.Union{Profile: "dev"}, cat); err != nil || out.Data != nil || out.Digest != "" {
		t.Errorf("no needs = %+v, %v", out, err)
	}

	st := &FileStore{Dir: t.TempDir()}
	if err := st.Set(ctx, "github.personal_access_token", []byte("fake-1")); err != nil {
		t.Fatal(err)
	}
	open := func(context.Context) (Store, error) { return st, nil }
	u := &gateway.Union{Profile: "dev", Servers: []string{"github", "notes"}}
	out, err := ForGateway(ctx, open, salt, u, cat)
	if err != nil || !strings.Contains(string(out.Data), "github.personal_access_token=fake-1") || out.Digest == "" {
		t.Fatalf("ForGateway = %+v, %v", out, err)
	}
	if len(out.Missing) != 1 || !strings.HasPrefix(out.Missing[0], "notes.key (") {
		t.Errorf("Missing = %q, want notes.key and who needs it", out.Missing)
	}
	if err := st.Set(ctx, "github.personal_access_token", []byte("fake-2")); err != nil {
		t.Fatal(err)
	}
	if again, err := ForGateway(ctx, open, salt, u, cat); err != nil || again.Digest == out.Digest {
		t.Errorf("a changed value kept the digest %q (%v)", again.Digest, err)
	}

	down := errors.New("no daemon")
	if _, err := ForGateway(ctx, func(context.Context) (Store, error) { return nil, down }, salt, u, cat); !errors.Is(err, down) {
		t.Errorf("a store that cannot be opened = %v", err)
	}
	os.WriteFile(filepath.Join(st.Dir, "github.personal_access_token"), []byte("x\nnotes.key=forged"), 0o600)
	var fe *GatewayFileError
	if _, err := ForGateway(ctx, open, salt, u, cat); !errors.As(err, &fe) || !errors.Is(err, ErrLineBreak) ||
		!strings.HasPrefix(err.Error(), "rendering the dev gateway's secrets: ") {
		t.Errorf("a multi-line value = %v, want a GatewayFileError of ErrLineBreak", err)
	}
}
