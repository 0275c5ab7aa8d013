// Package setup owns what `abox init` proposes and writes: the state it starts from (config,
// the catalog, any existing agentbox.yaml, what the workspace and the host's tools suggest),
// the default answers, and the plan that merges the answers into agentbox.yaml and config.yaml.
//
// It exists because that is neither a manifest rule nor a config rule but the join of both,
// with detection: cli keeps only the flags, the picker's fields and the output.
package setup
