package remedy

import (
	"errors"
	"fmt"
)

// Exit statuses. cli documents them in the root command's help.
const (
	ExitOK         = 0 // success
	ExitError      = 1 // any error
	ExitDoctor     = 2 // doctor found at least one failing check
	ExitBoundary   = 3 // the sandbox could not be verified; nothing was started
	ExitExecChange = 4 // a run changed what runs outside the sandbox, and run.on_exec_change is fail
)

// hinted attaches a hint naming the fix to an error.
type hinted struct {
	err  error
	hint string
}

func (h *hinted) Error() string { return h.err.Error() }
func (h *hinted) Unwrap() error { return h.err }

// With returns err with hint attached; nil stays nil.
func With(err error, hint string) error {
	if err == nil {
		return nil
	}
	return &hinted{err: err, hint: hint}
}

// Errorf is fmt.Errorf with a hint.
func Errorf(hint, format string, args ...any) error {
	return &hinted{err: fmt.Errorf(format, args...), hint: hint}
}

// exitCode is an error that ends abox with a specific status. A nil err prints nothing.
type exitCode struct {
	code int
	err  error
}

func (e *exitCode) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}
func (e *exitCode) Unwrap() error { return e.err }

// Exit ends abox with code, reporting err.
func Exit(code int, err error) error { return &exitCode{code: code, err: err} }

// Boundary marks err as a boundary refusal (exit 3).
func Boundary(err error) error { return Exit(ExitBoundary, err) }

// Silent ends abox with code after the command already printed its report.
func Silent(code int) error { return &exitCode{code: code} }

// IsExit reports whether err carries an exit status of its own, and whether it is silent (the
// command printed its report already).
func IsExit(err error) (exit, silent bool) {
	var ec *exitCode
	if !errors.As(err, &ec) {
		return false, false
	}
	return true, ec.err == nil
}

// Status is the status err ends abox with, and the hint to print under it: the one attached to
// it, else the one of a sentinel ([sentinels]), else one a lower package's error carries.
func Status(err error) (int, string) {
	code, hint := ExitError, ""
	var h *hinted
	if errors.As(err, &h) {
		hint = h.hint
	}
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			code = s.code
			if hint == "" {
				hint = s.hint(err)
			}
			break
		}
	}
	if hint == "" {
		hint = HintOf(err)
	}
	var ec *exitCode
	if errors.As(err, &ec) {
		code = ec.code
	}
	return code, hint
}

// HintOf returns the outermost hint attached to err, or one carried by a lower package's error.
func HintOf(err error) string {
	var h *hinted
	if errors.As(err, &h) {
		return h.hint
	}
	var hh interface{ HintText() string }
	if errors.As(err, &hh) {
		return hh.HintText()
	}
	return ""
}

// unhinted reports whether err is an error that has no hint yet: the functions that name the
// fix of a package's errors leave a hint already attached alone.
func unhinted(err error) bool { return err != nil && HintOf(err) == "" }
