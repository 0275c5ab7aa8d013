// Package testjson reads the event stream of `go test -json`: which tests ran, how each ended
// and what each printed. CI records its suites this way (.ci/run), shows them as plain `go test`
// would ([Print]), and then checks the record itself: that nothing skipped without a reason on the
// allow-list, and that every test SECURITY.md cites ran and passed (internal/securitymd). A
// record, not the exit status, is what says that a cited test was not silently skipped.
package testjson
