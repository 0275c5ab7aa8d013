// Package securitymd keeps the repository's SECURITY.md true to the code. Every row of its
// attack tables states an attack, the control that meets it, the honest result (refused,
// detected or succeeds) and the tests that prove it, written as `<dir>.<TestName>` or
// `<dir>.<TestName>/<subtest>`, with a clause saying how those tests fail without the control.
// A row whose control no test shows yet says "not yet proven" and cites none.
//
// Two checks hold the table to that. The meta-test, part of `go test ./...`, requires every
// cited test function (and every fuzz target SECURITY.md lists) to exist in its directory, so
// a renamed or deleted test fails at once instead of leaving a claim without its proof. In CI,
// [CheckRan] reads what the hermetic and end-to-end suites actually did (`go test -json`, see
// internal/testjson) and requires every cited test and subtest, matched exactly by the name go
// test gives it, to have run and passed: a proof that skipped, failed or never ran turns CI red
// with the row it was meant to prove. The command ./testgate runs it from .ci/run.
//
// The meta-test also holds SECURITY.md's mutation table to .ci/mutations: every patch is listed
// with the rows and tests its header names, each of those rows names the patch's mutation, and
// every "(mutation X)" a row names is a patch that exists.
package securitymd
