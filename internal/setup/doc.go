// Package setup owns what `abox init` proposes and writes: the state it starts from (config,
// the catalog, any existing agentbox.yaml, what the workspace and the host's tools suggest),
// the default answers, the plan that merges the answers into agentbox.yaml and config.yaml, and
// the write that renders it all before anything is written.
//
// It exists because that is neither a manifest rule nor a config rule but the join of both,
// with detection: cli keeps only the flags and the output, and the picker that asks on a
// terminal is package [github.com/aboxhq/abox/internal/setup/pick].
package setup
