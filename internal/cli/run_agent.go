package cli

import "regexp"

// loginHint is the fix for a headless run refused or ended for want of a Claude login
// ([sandbox.ErrNotLoggedIn]).
const loginHint = "run `abox shell` once and log Claude Code in there (`claude`, then /login); the login stays in the project's volume for every later run"

// sessionIDRe is what --resume accepts: Claude Code's session ids are UUIDs; nothing that
// could read as a flag.
var sessionIDRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$`)

func checkResume(opts runOptions) error {
	switch {
	case opts.resume != "" && opts.cont:
		return errorf("pass one of them", "--resume and --continue both pick the session to continue")
	case opts.resume != "" && !sessionIDRe.MatchString(opts.resume):
		return errorf("list the sessions of past runs with `abox logs --runs`", "--resume %q is not a session id", opts.resume)
	}
	return nil
}
