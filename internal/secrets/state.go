package secrets

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/aboxhq/abox/internal/statefs"
)

// Record is what secrets.json keeps about one stored secret: enough to detect drift and to say
// where the value came from, never the value.
type Record struct {
	Digest    string    `json:"digest"`              // [Digester.Digest] of the value
	Source    string    `json:"source"`              // op, file, env, prompt, docker, stdin
	Reference string    `json:"reference,omitempty"` // an op:// reference, a path or a variable name
	SyncedAt  time.Time `json:"synced_at"`
}

// State is secrets.json.
type State struct {
	Secrets map[string]Record `json:"secrets"`
}

// LoadState reads secrets.json; a missing file is an empty state.
func LoadState(path string) (*State, error) {
	s := &State{Secrets: map[string]Record{}}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if err := json.Unmarshal(data, s); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if s.Secrets == nil {
		s.Secrets = map[string]Record{}
	}
	return s, nil
}

// Save writes secrets.json atomically, 0600, keys sorted.
func (s *State) Save(path string) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		return fmt.Errorf("encoding %s: %w", path, err)
	}
	return statefs.WriteFile(path, buf.Bytes(), statefs.PrivateMode)
}
