// Package hostprobe asks the host's own tools how they are configured, so that abox honours the
// mirrors a machine already uses instead of naming a registry itself: npm's registry for an
// image that installs Claude Code from npm, go's module proxy and checksum database for the
// egress `abox init` suggests, and the resolvers in resolv.conf that netd asks for names
// Docker's embedded resolver would forward. It also finds programs on PATH for doctor.
//
// Every question is a method of [Probe], which callers take as a value: [System] runs the real
// tools, and tests pass a fake instead of changing PATH or a package variable. What the answers
// are used for, and what an empty answer means, is the caller's business.
package hostprobe
