package netd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// The model forwarder's JSON reading. A request body may be 32 MiB, two of them may be read at
// once, and netd has 256 MiB: encoding/json's decoder would hold copies of the body and of its
// largest string (a base64 image) several times over. So the body is checked in place:
// [json.Valid] (which allocates nothing) first, then [checkJSONKeys] walks the valid text for
// duplicate keys and depth, and [jsonMembers] and [jsonElements] return slices of it.

// maxJSONKey bounds a key the walk decodes: the Messages API's keys, and the schemas' and tool
// inputs' property names, are short.
const maxJSONKey = 4 << 10

// checkJSONKeys reports, for valid JSON b, a container nested deeper than maxDepth, an object
// with the same key twice (as a JSON parser decodes keys: "\u0074ools" is "tools"), or a key over
// maxJSONKey bytes.
func checkJSONKeys(b []byte, maxDepth int) error {
	w := keyWalker{b: b, max: maxDepth}
	_, err := w.value(skipJSONSpace(b, 0), 0)
	return err
}

type keyWalker struct {
	b    []byte
	max  int
	keys [][][]byte // per depth, the keys of the object open there (reused)
}

func (w *keyWalker) value(i, depth int) (int, error) {
	switch w.b[i] {
	case '{', '[':
		if depth >= w.max {
			return 0, errors.New("JSON nested too deeply")
		}
		if w.b[i] == '[' {
			return w.array(i, depth+1)
		}
		return w.object(i, depth+1)
	case '"':
		return skipJSONString(w.b, i), nil
	}
	return skipJSONScalar(w.b, i), nil
}

func (w *keyWalker) array(i, depth int) (int, error) {
	i = skipJSONSpace(w.b, i+1)
	if w.b[i] == ']' {
		return i + 1, nil
	}
	for {
		var err error
		if i, err = w.value(i, depth); err != nil {
			return 0, err
		}
		i = skipJSONSpace(w.b, i)
		if w.b[i] == ']' {
			return i + 1, nil
		}
		i = skipJSONSpace(w.b, i+1) // the comma
	}
}

func (w *keyWalker) object(i, depth int) (int, error) {
	for len(w.keys) <= depth {
		w.keys = append(w.keys, nil)
	}
	w.keys[depth] = w.keys[depth][:0]
	var many map[string]bool // past 32 keys, a map instead of a scan
	i = skipJSONSpace(w.b, i+1)
	if w.b[i] == '}' {
		return i + 1, nil
	}
	for {
		end := skipJSONString(w.b, i)
		key, err := jsonKey(w.b[i:end])
		if err != nil {
			return 0, err
		}
		switch {
		case many != nil:
			if many[string(key)] {
				return 0, fmt.Errorf("duplicate key %q", logText(string(key), 50))
			}
			many[string(key)] = true
		default:
			for _, k := range w.keys[depth] {
				if bytes.Equal(k, key) {
					return 0, fmt.Errorf("duplicate key %q", logText(string(key), 50))
				}
			}
			w.keys[depth] = append(w.keys[depth], key)
			if len(w.keys[depth]) > 32 {
				many = map[string]bool{}
				for _, k := range w.keys[depth] {
					many[string(k)] = true
				}
			}
		}
		i = skipJSONSpace(w.b, skipJSONSpace(w.b, end)+1) // the colon
		if i, err = w.value(i, depth); err != nil {
			return 0, err
		}
		i = skipJSONSpace(w.b, i)
		if w.b[i] == '}' {
			return i + 1, nil
		}
		i = skipJSONSpace(w.b, i+1) // the comma
	}
}

// jsonKey decodes a key (a JSON string with its quotes) as a parser would, without a copy when it
// is plain ASCII without escapes.
func jsonKey(raw []byte) ([]byte, error) {
	if len(raw) > maxJSONKey+2 {
		return nil, fmt.Errorf("a key over %d bytes", maxJSONKey)
	}
	plain := true
	for _, c := range raw {
		if c == '\\' || c >= 0x80 {
			plain = false
			break
		}
	}
	if plain {
		return raw[1 : len(raw)-1], nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	return []byte(s), nil
}

// jsonMembers returns the members of the valid JSON object b, keys decoded, values as slices
// of b; ok is false when b is not an object.
func jsonMembers(b []byte) (members map[string][]byte, ok bool) {
	i := skipJSONSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, false
	}
	members = map[string][]byte{}
	i = skipJSONSpace(b, i+1)
	if b[i] == '}' {
		return members, true
	}
	for {
		end := skipJSONString(b, i)
		key, err := jsonKey(b[i:end])
		if err != nil {
			return nil, false
		}
		i = skipJSONSpace(b, skipJSONSpace(b, end)+1)
		vend := skipJSONValue(b, i)
		members[string(key)] = b[i:vend]
		i = skipJSONSpace(b, vend)
		if b[i] == '}' {
			return members, true
		}
		i = skipJSONSpace(b, i+1)
	}
}

// jsonElements returns the elements of the valid JSON array b as slices of it; ok is false when
// b is not an array.
func jsonElements(b []byte) (elems [][]byte, ok bool) {
	i := skipJSONSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return nil, false
	}
	i = skipJSONSpace(b, i+1)
	if b[i] == ']' {
		return nil, true
	}
	for {
		end := skipJSONValue(b, i)
		elems = append(elems, b[i:end])
		i = skipJSONSpace(b, end)
		if b[i] == ']' {
			return elems, true
		}
		i = skipJSONSpace(b, i+1)
	}
}

// The skips below read valid JSON only (the body passed json.Valid): each returns the index
// just past what starts at i.

func skipJSONSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

func skipJSONString(b []byte, i int) int {
	for j := i + 1; ; j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
}

func skipJSONScalar(b []byte, i int) int {
	for ; i < len(b); i++ {
		switch b[i] {
		case ',', ']', '}', ' ', '\t', '\r', '\n':
			return i
		}
	}
	return i
}

func skipJSONValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipJSONString(b, i)
	case '{', '[':
		depth := 0
		for j := i; ; j++ {
			switch b[j] {
			case '"':
				j = skipJSONString(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
	}
	return skipJSONScalar(b, i)
}
