// Package pick is `abox init`'s interactive picker: the questions init asks on a terminal — the
// gateway profile, MCP servers and their tool narrowing, toolchains, egress, context
// directories, the permission mode and how Claude Code gets its credential — and the summary
// it asks to confirm. It runs huh forms, on the terminal or, in accessible mode, as plain
// numbered prompts read line by line (screen readers, scripted input).
//
// It is a package of its own so that the forms, and the quirks of huh's accessible mode that
// scripted input runs into, are tested apart from the command and kept out of cli, which only
// chooses the streams and whether to ask. What the questions start from and what the answers
// become is package setup's.
package pick
