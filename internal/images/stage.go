package images

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/aboxhq/abox/internal/statefs"
)

// Staged file and directory modes. The context is private to the user; the files are
// world-readable because COPY keeps the mode, and the image's root reads them.
const (
	fileMode = 0o644
	dirMode  = 0o700
)

// stage replaces dir with a build context holding files (context path → source path). The
// context is written to a sibling directory and renamed into place: when ctx ends or a copy
// fails, the sibling is removed and dir is left as it was.
func stage(ctx context.Context, dir string, files map[string]string) (err error) {
	parent := filepath.Dir(dir)
	if err := statefs.MkdirAll(parent); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".tmp-*")
	if err != nil {
		return fmt.Errorf("staging %s: %w", dir, err)
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(tmp)
		}
	}()
	for _, rel := range slices.Sorted(maps.Keys(files)) {
		if err := ctx.Err(); err != nil {
			return err
		}
		dst := filepath.Join(tmp, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(dst), dirMode); err != nil {
			return err
		}
		if err := copyFile(files[rel], dst); err != nil {
			return fmt.Errorf("staging %s: %w", rel, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("clearing %s: %w", dir, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("staging %s: %w", dir, err)
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fileMode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// FileSHA256 returns the hex sha256 of the file at path.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// checkSHA256 refuses the file at path (a boundary refusal) unless its sha256 is want, the
// value of key.sha256 in config.yaml. An empty want refuses too: nothing vouches for the file.
func checkSHA256(path, want, key string) error {
	if want == "" {
		return refusef("set "+key+".sha256 in config.yaml to the sha256 of a file you trust",
			"refusing %s: %s.sha256 is not set", path, key)
	}
	got, err := FileSHA256(path)
	if err != nil {
		return errorf("set "+key+".path in config.yaml to an existing file", "reading %s: %v", path, err)
	}
	if got != want {
		return refusef("update "+key+".sha256 in config.yaml only if you trust this file",
			"%s has sha256 %s, but %s.sha256 is %s", path, got, key, want)
	}
	return nil
}
