package docker

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
)

// Limits on what [Client.CopyFrom] extracts. The copied tree comes from a container abox does not
// trust (the agent's), so its size and entry count are bounded.
const (
	MaxCopyBytes   = 1 << 30 // total bytes of regular files
	MaxCopyEntries = 100_000
)

// CopyFrom copies srcPath out of container into destDir, as `docker cp container:srcPath destDir`
// would (a directory "/x/out" lands in destDir/out), but extracts the archive itself, safely:
//
//   - an entry with an absolute name or a ".." element fails the copy;
//   - only regular files and directories are written; symlinks, hard links, devices and FIFOs
//     are skipped, so nothing the container planted can point outside destDir;
//   - writes go through an [os.Root] on destDir, so a symlink already inside destDir cannot
//     redirect them outside either;
//   - files are created 0600 and directories 0700, whatever the archive says;
//   - more than [MaxCopyBytes] bytes or [MaxCopyEntries] entries fail the copy.
//
// destDir is created if needed. A missing srcPath is an error matching [ErrNotFound].
func (c *Client) CopyFrom(ctx context.Context, container, srcPath, destDir string) error {
	if err := os.MkdirAll(destDir, 0o700); err != nil {
		return fmt.Errorf("copying from %s: %w", container, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pr, pw := io.Pipe()
	extracted := make(chan error, 1)
	go func() {
		err := extractTar(pr, destDir, MaxCopyBytes, MaxCopyEntries)
		if err != nil {
			cancel() // stop docker; its further writes fail at once
			pr.CloseWithError(err)
		} else {
			_, _ = io.Copy(io.Discard, pr) // trailing padding after the end-of-archive marker
		}
		extracted <- err
	}()
	args := []string{"cp", container + ":" + srcPath, "-"}
	_, runErr := c.Run(ctx, Invocation{Args: args, Stdout: pw, StreamOnly: true})
	pw.Close()
	xErr := <-extracted
	var ee *ExitError
	switch {
	case errors.As(runErr, &ee):
		return runErr
	case xErr != nil:
		return fmt.Errorf("copying %s:%s: %w", container, srcPath, xErr)
	default:
		return runErr
	}
}

// extractTar writes the regular files and directories of the tar stream r under destDir, within
// the limits. See [Client.CopyFrom] for the rules.
func extractTar(r io.Reader, destDir string, maxBytes int64, maxEntries int) error {
	root, err := os.OpenRoot(destDir)
	if err != nil {
		return err
	}
	defer root.Close()
	tr := tar.NewReader(r)
	var total int64
	for entries := 1; ; entries++ {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading archive: %w", err)
		}
		if entries > maxEntries {
			return fmt.Errorf("archive has more than %d entries", maxEntries)
		}
		n, err := extractEntry(root, hdr, tr, maxBytes-total)
		if err != nil {
			return err
		}
		total += n
	}
}

// extractEntry writes one entry and returns the number of file bytes written.
func extractEntry(root *os.Root, hdr *tar.Header, r io.Reader, remaining int64) (int64, error) {
	name, err := safeName(hdr.Name)
	if err != nil || name == "" {
		return 0, err
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		if err := root.MkdirAll(name, 0o700); err != nil {
			return 0, fmt.Errorf("creating %s: %w", name, err)
		}
		return 0, nil
	case tar.TypeReg:
		if hdr.Size > remaining {
			return 0, fmt.Errorf("archive exceeds the size limit at %s", name)
		}
		return writeFile(root, name, r, remaining)
	default:
		return 0, nil // symlinks, links, devices, FIFOs: never created
	}
}

// writeFile creates name (and its parent directories) under root and copies at most remaining
// bytes into it.
func writeFile(root *os.Root, name string, r io.Reader, remaining int64) (int64, error) {
	if dir := path.Dir(name); dir != "." {
		if err := root.MkdirAll(dir, 0o700); err != nil {
			return 0, fmt.Errorf("creating %s: %w", dir, err)
		}
	}
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return 0, fmt.Errorf("creating %s: %w", name, err)
	}
	n, err := io.Copy(f, io.LimitReader(r, remaining+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	switch {
	case err != nil:
		return n, fmt.Errorf("writing %s: %w", name, err)
	case n > remaining:
		return n, fmt.Errorf("archive exceeds the size limit at %s", name)
	}
	return n, nil
}

// safeName checks an archive entry name and returns it cleaned and relative, or "" for the
// archive's root. Absolute names and names with a ".." element are refused outright: docker
// never produces them, so seeing one means the stream is hostile.
func safeName(name string) (string, error) {
	if strings.ContainsRune(name, 0) {
		return "", fmt.Errorf("archive entry %q: NUL in name", name)
	}
	if strings.HasPrefix(name, "/") {
		return "", fmt.Errorf("archive entry %q: absolute path", name)
	}
	for _, elem := range strings.Split(name, "/") {
		if elem == ".." {
			return "", fmt.Errorf("archive entry %q: path leaves the destination", name)
		}
	}
	clean := path.Clean(name)
	if clean == "." {
		return "", nil
	}
	return clean, nil
}
