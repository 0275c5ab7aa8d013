package telemetry

import "fmt"

// Kinds of [MaskEvent].
const (
	MaskMoved    = "moved"    // the masked content is no longer at the mask's path; nothing is there
	MaskPlanted  = "planted"  // something else is at the mask's path, or diverts it
	MaskAppeared = "appeared" // a literal mask path that did not exist at start exists now
)

// MaskEvent is a mask that did not hold, at teardown, what it held when the run started, and
// what abox did about it. Paths are workspace-relative and come from the workspace: print them
// escaped.
type MaskEvent struct {
	Mask        string `json:"mask"` // the masked path at start
	Kind        string `json:"kind"` // moved, planted or appeared
	Planted     string `json:"planted,omitempty"`
	PlantedType string `json:"planted_type,omitempty"` // directory, file, symlink, …
	Quarantine  string `json:"quarantine,omitempty"`   // where abox moved what was planted
	Original    string `json:"original,omitempty"`     // where the masked content is now
	Problem     string `json:"problem,omitempty"`      // what abox could not do
}

// Failed reports whether the event is a failure: something was put in a mask's place. Content
// that only moved stays masked where it is.
func (e MaskEvent) Failed() bool { return e.Kind != MaskMoved }

// String describes the event for a person, in one line.
func (e MaskEvent) String() string {
	var s string
	switch e.Kind {
	case MaskMoved:
		s = fmt.Sprintf("mask moved: %s", e.Mask)
	case MaskAppeared:
		s = fmt.Sprintf("mask replaced: %s did not exist at start; the agent created a %s there", e.Mask, e.PlantedType)
	default:
		s = fmt.Sprintf("mask replaced: %s", e.Mask)
		if e.Planted == e.Mask {
			s += fmt.Sprintf(" holds a %s the agent put there", e.PlantedType)
		} else {
			s += fmt.Sprintf(" is diverted: %s is now a %s", e.Planted, e.PlantedType)
		}
	}
	if e.Quarantine != "" {
		s += "; abox moved it to " + e.Quarantine
	}
	switch {
	case e.Kind == MaskAppeared:
	case e.Original != "":
		s += "; the masked content is now at " + e.Original
	case e.Problem == "":
		s += "; the masked content is no longer in the workspace"
	}
	if e.Problem != "" {
		s += "; " + e.Problem
	}
	return s
}
