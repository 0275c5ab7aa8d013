// Package securitymd holds the meta-test of the repository's SECURITY.md: its attack tables
// must stay true to the code. Every row states an attack, the control that meets it, the
// honest result (refused, detected or succeeds) and the test that proves it, written as
// `<dir>.<TestName>` or `<dir>.<TestName>/<subtest>`; the test must exist in that directory,
// and so must every fuzz target SECURITY.md lists. A renamed or deleted test therefore fails
// `go test ./...` until SECURITY.md is updated, instead of leaving a claim without its proof.
//
// The package has no code outside its test: it only gives the meta-test a home.
package securitymd
