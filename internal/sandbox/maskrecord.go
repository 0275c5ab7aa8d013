package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/aboxhq/abox/internal/statefs"
)

// maskRecordVersion is the format of masked.json.
const maskRecordVersion = 1

// MaskRecord is what abox keeps between runs about masked content (masked.json in the
// project's state directory, never in the workspace): the identity of every masked path, so
// that the next run masks that content wherever it is then, under whatever name.
type MaskRecord struct {
	Version int           `json:"version"`
	Entries []RecordEntry `json:"entries"`
}

// RecordEntry is one piece of masked content.
type RecordEntry struct {
	Ino uint64 `json:"ino"`
	// OtherFS is set when the content is on another filesystem than the workspace root (a
	// mount inside the workspace). Device numbers are not kept: they may change at a reboot,
	// while the root's filesystem is the root's.
	OtherFS bool     `json:"other_fs,omitempty"`
	Dir     bool     `json:"dir,omitempty"`
	Pattern string   `json:"pattern"` // the pattern that first masked it
	Origin  string   `json:"origin"`  // the path it was first masked at
	Paths   []string `json:"paths"`   // where it was masked at the last run
}

// recordKey is how the walk looks content up in the record.
type recordKey struct {
	OtherFS bool
	Ino     uint64
	Dir     bool
}

// LoadMaskRecord reads masked.json; a missing file is an empty record. A record that does not
// decode refuses the run: without it, content the agent moved would be unmasked.
func LoadMaskRecord(path string) (*MaskRecord, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &MaskRecord{Version: maskRecordVersion}, nil
	}
	hint := "inspect it; removing it makes abox forget where masked content moved, so move such content back under a masked path first"
	if err != nil {
		return nil, maskErr(hint, "reading the mask record: %v", err)
	}
	var r MaskRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, maskErr(hint, "the mask record %s does not decode: %v", path, err)
	}
	if r.Version != maskRecordVersion {
		return nil, maskErr(hint, "the mask record %s has version %d, want %d", path, r.Version, maskRecordVersion)
	}
	return &r, nil
}

// SaveMaskRecord writes rec atomically with mode 0600.
func SaveMaskRecord(path string, rec *MaskRecord) error {
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	if err := statefs.WriteFile(path, append(data, '\n'), statefs.PrivateMode); err != nil {
		return maskErr("check the permissions and free space of abox's state directory",
			"recording the masked content: %v", err)
	}
	return nil
}

// index returns the entries by key, keeping only those whose pattern is still a mask: content
// the user stopped masking is not followed.
func (r *MaskRecord) index(pats []pattern) map[recordKey]*RecordEntry {
	out := map[recordKey]*RecordEntry{}
	if r == nil {
		return out
	}
	current := map[string]bool{}
	for _, p := range pats {
		current[p.raw] = true
	}
	for i := range r.Entries {
		e := &r.Entries[i]
		if current[e.Pattern] {
			out[recordKey{OtherFS: e.OtherFS, Ino: e.Ino, Dir: e.Dir}] = e
		}
	}
	return out
}

// Record returns what the next run must follow: every masked piece of content found now.
// Content recorded before and not found now is dropped; see the package doc for why that is
// safe.
func (s *MaskSet) Record() *MaskRecord {
	r := &MaskRecord{Version: maskRecordVersion, Entries: []RecordEntry{}}
	at := map[FileID]int{}
	for _, m := range s.Masks {
		i, ok := at[m.ID]
		if !ok {
			i = len(r.Entries)
			at[m.ID] = i
			r.Entries = append(r.Entries, RecordEntry{Ino: m.ID.Ino, OtherFS: m.ID.Dev != s.rootDev, Dir: m.Dir,
				Pattern: m.Pattern, Origin: m.Origin})
		}
		if m.Reason != ByLink {
			r.Entries[i].Pattern, r.Entries[i].Origin = m.Pattern, m.Origin
		}
		r.Entries[i].Paths = append(r.Entries[i].Paths, m.Path)
	}
	return r
}

// String describes why a mask is there, for a person.
func (m Mask) String() string {
	switch m.Reason {
	case ByContent:
		return fmt.Sprintf("%s (holds what was masked at %s)", m.Path, m.Origin)
	case ByLink:
		return fmt.Sprintf("%s (a hard link of masked %s)", m.Path, m.Origin)
	case ByTarget:
		return fmt.Sprintf("%s (where masked %s leads)", m.Path, m.Origin)
	}
	return m.Path
}
