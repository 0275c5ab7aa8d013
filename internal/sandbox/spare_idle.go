package sandbox

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// IdleSpares returns the container names of the spare netds no run has claimed yet, of every
// project under stateDir (paths.Paths.State): what their records name. A record is removed
// once its run owns the spare, so a name read here served no run when it was read.
func IdleSpares(stateDir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(stateDir, "projects", "*", spareRecordFile))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if errors.Is(err, fs.ErrNotExist) { // claimed meanwhile
			continue
		}
		if err != nil {
			return nil, err
		}
		var rec spareRecord
		if json.Unmarshal(b, &rec) != nil || rec.Netd == "" {
			continue // unreadable: the next run removes it, and its netd counts as live
		}
		names = append(names, rec.Netd)
	}
	return names, nil
}
