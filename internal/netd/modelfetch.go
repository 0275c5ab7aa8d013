package netd

import (
	"encoding/json"
	"strconv"
	"strings"
)

// The model forwarder's walk of a request body for what the API's own servers would fetch or
// read on the agent's behalf (the list, and where the API documents each, is in the package
// doc). It walks every value of the body, wherever it is (messages, system, tool results,
// documents nested in documents, tool inputs), and does not look at fixed paths: the API reads
// a content block wherever it may appear, and new places keep appearing.
//
// It reads types as a lenient parser might: a member whose key is "type" in any case or
// spelling ("Type", "t_y_p_e", "typ\ud800e") counts as a type, and a type's value is compared
// lower-cased with everything but letters and digits dropped ("URL", " url", "u\u0000rl" are
// all "url"). So no spelling the API could read as a fetch passes as something else; the price
// is that a tool input of the agent's own tools that happens to say {"type": "url"} is refused
// too, which no tool of Claude Code's does.

// fetchRule is a content type the API's servers act on past the allowlist: a block or source
// whose type (normalised by normType) is typ, or starts with it when prefix is set.
type fetchRule struct {
	typ    string
	prefix bool
	what   string
}

// fetchedTypes are the types refused unless the user allows server tools. Every server tool's
// own blocks are among them: replayed, they ask nothing new, but they exist only where server
// tools ran, and a server_tool_use at the end of a turn may be carried on by the API.
var fetchedTypes = []fetchRule{
	{"url", false, "a URL source: the API's servers fetch the URL"},
	{"file", false, "a Files API source: the API reads a stored file netd never saw"},
	{"containerupload", true, "a Files API upload into the API's code execution container"},
	{"mcp", true, "an MCP connector block: the API's servers call a remote MCP server"},
	{"servertooluse", true, "a server tool use: the API's servers run the tool"},
	{"websearch", true, "a web search server tool block"},
	{"webfetch", true, "a web fetch server tool block"},
	{"codeexecution", true, "a code execution server tool block"},
	{"bashcodeexecution", true, "a code execution server tool block"},
	{"texteditorcodeexecution", true, "a code execution server tool block"},
	{"encryptedcodeexecution", true, "a code execution server tool block"},
	{"toolsearchtool", true, "a tool search server tool block"},
	{"advisor", true, "an advisor server tool block"},
}

// inlineSources are the only source types an image or document block may have: data carried in
// the body itself. Any other (url, file, and whatever type the API adds next) is refused.
var inlineSources = []string{"base64", "text", "content"}

// fetchField says where in a body netd found something the API's servers would fetch, and what.
type fetchField struct {
	path string // "messages[0].content[1].source.type"
	what string
}

// findFetch returns the first place in the valid JSON b (checked by checkJSONKeys, so nested
// at most maxModelJSONDepth deep) where the API's servers would fetch or read something netd
// never sees, or nil. It reads b in place: only the keys and types it compares are decoded.
func findFetch(b []byte) *fetchField {
	w := fetchWalker{b: b}
	_, f := w.value(skipJSONSpace(b, 0))
	return f
}

type fetchWalker struct {
	b    []byte
	path []jsonSeg // where the walk is, for the refusal's message
	typ  [maxTypeLen]byte
}

// jsonSeg is one step of a path: a member's key, or an element's index when key is nil.
type jsonSeg struct {
	key   []byte
	index int
}

func (w *fetchWalker) value(i int) (int, *fetchField) {
	switch w.b[i] {
	case '{':
		return w.object(i)
	case '[':
		return w.array(i)
	case '"':
		return skipJSONString(w.b, i), nil
	}
	return skipJSONScalar(w.b, i), nil
}

func (w *fetchWalker) array(i int) (int, *fetchField) {
	i = skipJSONSpace(w.b, i+1)
	if w.b[i] == ']' {
		return i + 1, nil
	}
	for n := 0; ; n++ {
		w.path = append(w.path, jsonSeg{index: n})
		end, f := w.value(i)
		w.path = w.path[:len(w.path)-1]
		if f != nil {
			return 0, f
		}
		i = skipJSONSpace(w.b, end)
		if w.b[i] == ']' {
			return i + 1, nil
		}
		i = skipJSONSpace(w.b, i+1) // the comma
	}
}

// object walks an object's members, refusing a fetched type among them, and once it is read
// whole, a source of an image or document block that is not carried inline.
func (w *fetchWalker) object(i int) (int, *fetchField) {
	var (
		block     bool   // a type member says image or document
		source    []byte // the value of a source member
		sourceKey []byte
	)
	i = skipJSONSpace(w.b, i+1)
	if w.b[i] == '}' {
		return i + 1, nil
	}
	for {
		kend := skipJSONString(w.b, i)
		key, _ := jsonKey(w.b[i:kend]) // checkJSONKeys decoded every key already
		i = skipJSONSpace(w.b, skipJSONSpace(w.b, kend)+1)
		w.path = append(w.path, jsonSeg{key: key})
		end, f := w.value(i)
		if f == nil && keyIs(key, "type") {
			if t, ok := w.typeValue(w.b[i:end]); ok {
				if r := fetchedType(t); r != nil {
					f = w.refuse(r.what + " (type " + strconv.Quote(logText(string(t), 64)) + ")")
				}
				block = block || string(t) == "image" || string(t) == "document"
			}
		}
		w.path = w.path[:len(w.path)-1]
		if f != nil {
			return 0, f
		}
		if keyIs(key, "source") {
			source, sourceKey = w.b[i:end], key
		}
		i = skipJSONSpace(w.b, end)
		if w.b[i] == '}' {
			break
		}
		i = skipJSONSpace(w.b, i+1) // the comma
	}
	if block && source != nil && !w.inlineSource(source) {
		w.path = append(w.path, jsonSeg{key: sourceKey})
		f := w.refuse("an image or document source not carried in the body: the API's servers would fetch it")
		w.path = w.path[:len(w.path)-1]
		return 0, f
	}
	return i + 1, nil
}

func (w *fetchWalker) refuse(what string) *fetchField {
	return &fetchField{path: jsonPath(w.path), what: what}
}

// inlineSource reports whether the JSON value v is an object whose type members all name one
// of inlineSources, and it has one.
func (w *fetchWalker) inlineSource(v []byte) bool {
	if v[0] != '{' {
		return false
	}
	typed := false
	i := skipJSONSpace(v, 1)
	for v[i] != '}' {
		kend := skipJSONString(v, i)
		key, _ := jsonKey(v[i:kend])
		i = skipJSONSpace(v, skipJSONSpace(v, kend)+1)
		end := skipJSONValue(v, i)
		if keyIs(key, "type") {
			t, ok := w.typeValue(v[i:end])
			if !ok || !oneOf(string(t), inlineSources) {
				return false
			}
			typed = true
		}
		if i = skipJSONSpace(v, end); v[i] == ',' {
			i = skipJSONSpace(v, i+1)
		}
	}
	return typed
}

// fetchedType returns the rule refusing the normalised type t, or nil.
func fetchedType(t []byte) *fetchRule {
	for k := range fetchedTypes {
		r := &fetchedTypes[k]
		if string(t) == r.typ || (r.prefix && len(t) > len(r.typ) && string(t[:len(r.typ)]) == r.typ) {
			return r
		}
	}
	return nil
}

// maxTypeLen bounds a type as the walk compares it: the API's are under 64 bytes.
const maxTypeLen = 256

// typeValue returns the JSON string v normalised as normType does, in the walker's buffer, or
// false when v is not a string or is too long to be a type.
func (w *fetchWalker) typeValue(v []byte) ([]byte, bool) {
	if v[0] != '"' || len(v) > maxJSONKey+2 {
		return nil, false
	}
	s, err := jsonKey(v) // decodes a string as a key is decoded
	if err != nil {
		return nil, false
	}
	return normType(w.typ[:0], s), true
}

// normType appends s to out lower-cased, with everything but ASCII letters and digits dropped,
// up to out's capacity.
func normType(out, s []byte) []byte {
	for _, c := range s {
		switch {
		case len(out) == cap(out):
			return out
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			out = append(out, c)
		case c >= 'A' && c <= 'Z':
			out = append(out, c+'a'-'A')
		}
	}
	return out
}

// keyIs reports whether the decoded key, normalised as a type is, is name (ASCII lower-case
// letters only).
func keyIs(key []byte, name string) bool {
	n := 0
	for _, c := range key {
		switch {
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
		case c < 'a' || c > 'z':
			if c >= '0' && c <= '9' {
				return false
			}
			continue
		}
		if n == len(name) || name[n] != c {
			return false
		}
		n++
	}
	return n == len(name)
}

func oneOf(s string, set []string) bool {
	for _, x := range set {
		if s == x {
			return true
		}
	}
	return false
}

// jsonPath is a path for a log line: keys that are plain words as they are, others quoted,
// indexes in brackets; at most 200 bytes.
func jsonPath(path []jsonSeg) string {
	var b strings.Builder
	for _, s := range path {
		switch {
		case s.key == nil:
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			if plainKey(s.key) {
				b.Write(s.key)
			} else {
				q, _ := json.Marshal(string(s.key))
				b.Write(q)
			}
		}
	}
	return logText(b.String(), 200)
}

func plainKey(k []byte) bool {
	for _, c := range k {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return len(k) > 0
}
