// Package config reads abox's global configuration: config.yaml (images, Claude Code source,
// gateway, profiles, defaults), secrets.yaml (where each secret comes from — references, never
// values) and custom-servers.yaml (MCP servers outside the Docker catalog).
//
// Like the manifest, every file is decoded strictly and every value that reaches a rendered file
// or an argv is checked here, at the boundary.
package config
