package claudecode

import "fmt"

// FetchError is a release file that could not be read: the host did not answer, refused, or
// sent something else than a 200.
type FetchError struct {
	URL string
	Err error
}

func (e *FetchError) Error() string { return fmt.Sprintf("fetching %s: %v", e.URL, e.Err) }
func (e *FetchError) Unwrap() error { return e.Err }

// Host is the host the fetch went to.
func (e *FetchError) Host() string { return host(e.URL) }

// ManifestError is a manifest that does not vouch for the binary asked for.
type ManifestError struct {
	URL string
	Err error
}

func (e *ManifestError) Error() string { return fmt.Sprintf("%s: %v", e.URL, e.Err) }
func (e *ManifestError) Unwrap() error { return e.Err }

// MismatchError is a download whose sha256 or size is not the one it was checked against.
type MismatchError struct {
	URL               string
	Want, Got         string
	WantSize, GotSize int64
	Pinned            bool // Want came from claude_code.sha256
}

func (e *MismatchError) Error() string {
	from := "the release manifest"
	if e.Pinned {
		from = "claude_code.sha256"
	}
	if e.WantSize > 0 && e.GotSize != e.WantSize {
		return fmt.Sprintf("%s sent %d bytes, but %s says %d", e.URL, e.GotSize, from, e.WantSize)
	}
	return fmt.Sprintf("%s has sha256 %s, but %s says %s", e.URL, e.Got, from, e.Want)
}

// ChangedError is a manifest naming another checksum for a version than the one a binary was
// verified against before.
type ChangedError struct {
	URL, Platform string
	Before, Now   string
	Record        string // the record of the earlier download, which holds Before
}

func (e *ChangedError) Error() string {
	return fmt.Sprintf("%s now names sha256 %s for %s, but abox verified %s from it before: a published release does not change",
		e.URL, e.Now, e.Platform, e.Before)
}
