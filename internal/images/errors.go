package images

import "fmt"

// Error is a failure to prepare an image's inputs, with the change that fixes it.
type Error struct {
	Err  error
	Hint string
	// Refused marks a boundary refusal: an input is not what vouches for it, and no image was
	// staged or built from it.
	Refused bool
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// HintText returns the fix.
func (e *Error) HintText() string { return e.Hint }

func errorf(hint, format string, args ...any) *Error {
	return &Error{Err: fmt.Errorf(format, args...), Hint: hint}
}

func refusef(hint, format string, args ...any) *Error {
	e := errorf(hint, format, args...)
	e.Refused = true
	return e
}

// BuildError is a docker build that failed. Log holds the last lines of its output.
type BuildError struct {
	Tag string
	Log string
	Err error // the [*docker.ExitError]
}

func (e *BuildError) Error() string { return fmt.Sprintf("building %s failed", e.Tag) }
func (e *BuildError) Unwrap() error { return e.Err }
