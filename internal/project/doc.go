// Package project loads an abox project: the workspace's agentbox.yaml found at or above a
// directory, the global config.yaml and custom-servers.yaml, and the project's state layout; from
// them the [render.Spec] every artifact is rendered from, and the secrets the project requires.
//
// It is a package of its own, not a part of cli, because every command of a project, doctor's
// re-render of the artifacts and the preflight's check that they are current must load a
// project and build its spec by one rule: a second copy that differed (another profile check,
// another agent identity, another CA set) would render a different sandbox than the one audited.
// Its errors are typed; only cli names the command that fixes them.
package project
