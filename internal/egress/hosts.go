package egress

import "strings"

// ParseHosts parses hosts a person typed, separated by spaces or commas, into canonical entries
// ([Entry.String]); the first bad one is the error.
func ParseHosts(s string) ([]string, error) {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' }) {
		e, err := Parse(f)
		if err != nil {
			return nil, err
		}
		out = append(out, e.String())
	}
	return out, nil
}
