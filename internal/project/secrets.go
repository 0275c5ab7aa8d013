package project

import (
	"errors"
	"path/filepath"

	"github.com/aboxhq/abox/internal/approval"
	"github.com/aboxhq/abox/internal/catalog"
	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/secrets"
)

// RequiredSecrets returns what the project in workspace ws requires ([secrets.Required]): what
// its workspace manifest and its approved one need, with the servers looked up in the catalogs
// of mcpHome and custom-servers.yaml. config.yaml is not read. A manifest that does not load is
// a [*ManifestError], a custom-servers.yaml a [*ConfigError]; a corrupt approval is refused as
// [approval.Load] refuses it, never taken for "nothing approved".
func RequiredSecrets(ws string, ps paths.Paths, mcpHome string) ([]secrets.Need, error) {
	m, _, err := manifest.Load(filepath.Join(ws, manifest.FileName))
	if err != nil {
		return nil, &ManifestError{Err: err}
	}
	approved, err := approval.Approved(ps.Project(ws))
	if err != nil {
		return nil, err
	}
	custom, err := config.LoadCustomServers(ps.CustomServersFile())
	if err != nil {
		return nil, &ConfigError{File: ps.CustomServersFile(), Err: err}
	}
	cat, err := catalog.Load(mcpHome, custom)
	if err != nil {
		return nil, err
	}
	return secrets.Required(m, approved, cat), nil
}

// RequiredSecretsAt is [RequiredSecrets] of the project at or above dir ([manifest.Find]); none
// when dir is in no project.
func RequiredSecretsAt(dir string, ps paths.Paths, mcpHome string) ([]secrets.Need, error) {
	ws, err := manifest.Find(dir)
	if errors.Is(err, manifest.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return RequiredSecrets(ws, ps, mcpHome)
}
