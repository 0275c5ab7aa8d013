package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/render"
)

// RemoveContainers removes every container, running or not, that abox labelled with the
// project's hash, with its anonymous volumes, and returns how many. Another project's
// containers carry another hash and are never matched.
func RemoveContainers(ctx context.Context, d *docker.Client, hash string) (int, error) {
	cs, err := d.ContainersByLabel(ctx, map[string]string{"abox.managed": "true", "abox.hash": hash}, true)
	if err != nil {
		return 0, err
	}
	var ids []string
	for _, c := range cs {
		ids = append(ids, c.ID)
	}
	return len(ids), d.Remove(ctx, true, true, ids...)
}

// RemoveCaches removes the volumes of the project's toolchain caches, for `abox nuke`: every
// volume named as one of the project's caches is (render.CacheVolume, from the project's hash),
// whatever mounts.caches says now. The manifest is in the workspace, where the agent writes: an
// agent that poisoned its npm cache and took `caches` out of agentbox.yaml must not keep the
// poison past a nuke. A volume in use is not removed: the error says which.
func RemoveCaches(ctx context.Context, d *docker.Client, hash string) error {
	names, err := d.VolumesNamed(ctx, render.CacheVolume(hash, ""))
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := d.VolumeRemove(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

// RemoveState removes what abox made for the project outside docker, for `abox nuke`: its
// rendered artifacts, staged build files, masks, approval, spare netd's record and retire list,
// and the generated files of the workspace's review copy. Run history and the manifest stay.
func RemoveState(proj paths.Project) error {
	for _, dir := range []string{proj.Artifacts(), proj.Build(), proj.Masks()} {
		if err := removeAll(dir); err != nil {
			return err
		}
	}
	os.Remove(proj.Approved())
	os.Remove(filepath.Join(proj.Dir, spareRecordFile))   // its container went with the others
	os.Remove(filepath.Join(proj.Dir, spareStartingFile)) // so did the one it names
	os.Remove(filepath.Join(proj.Dir, retiredFile))       // and the finished netds it lists
	removeReview(filepath.Join(proj.Workspace, render.ReviewDir))
	return nil
}

func removeAll(dir string) error {
	// Read-only directories (the mask's empty.d) must be made writable to be emptied.
	filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err == nil && info.IsDir() {
			os.Chmod(path, 0o700)
		}
		return nil
	})
	if err := os.RemoveAll(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing %s: %w", dir, err)
	}
	return nil
}

// removeReview removes the files abox generated in .devcontainer/, and the directory if that
// leaves it empty. Files the user added stay. A symlinked directory is left alone.
func removeReview(dir string) {
	if st, err := os.Lstat(dir); err != nil || !st.IsDir() {
		return
	}
	for _, name := range []string{render.ReviewMarker, render.AgentDockerfile, render.NetdDockerfile, policy.RulesFile, policy.QueueFile, render.ComposeFile} {
		os.Remove(filepath.Join(dir, name))
	}
	os.Remove(dir)
}
