package netd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
)

// refCheckKeys is the reference for checkJSONKeys: encoding/json's decoder, token by token.
func refCheckKeys(data []byte, maxDepth int) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	var walk func(depth int) error
	walk = func(depth int) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			if depth >= maxDepth {
				return errors.New("JSON nested too deeply")
			}
			seen := map[string]bool{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				if seen[k.(string)] {
					return fmt.Errorf("duplicate key %q", k)
				}
				seen[k.(string)] = true
				if err := walk(depth + 1); err != nil {
					return err
				}
			}
			_, err = dec.Token()
		case json.Delim('['):
			if depth >= maxDepth {
				return errors.New("JSON nested too deeply")
			}
			for dec.More() {
				if err := walk(depth + 1); err != nil {
					return err
				}
			}
			_, err = dec.Token()
		}
		return err
	}
	if err := walk(0); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the value")
	}
	return nil
}

var jsonSeeds = []string{
	`{}`, `[]`, `{"a":1,"b":[1,2,{"c":"}"}]}`, `{"a":1,"a":2}`, `{"tools":[],"\u0074ools":[]}`,
	`{"a\\":"\"}{[","b":{"a":1,"a":{}}}`, ` { "x" : [ { } , [ ] , "\\\"" , -1.5e3 , true , null ] } `,
	`[[[[[[1]]]]]]`, `{"k":{"k":{"k":{}}}}`, `"just a string"`, `12`, `{"é":1,"\u00e9":2}`,
	`{"` + strings.Repeat("k", 5000) + `":1}`,
}

// FuzzCheckJSONKeys: on valid JSON, checkJSONKeys refuses exactly what the decoder-based
// reference refuses (duplicates as a parser decodes keys, depth), and jsonMembers returns each
// member's value as encoding/json reads it.
func FuzzCheckJSONKeys(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add([]byte(s))
	}
	var many strings.Builder
	for i := range 40 {
		fmt.Fprintf(&many, `"k%d":%d,`, i, i)
	}
	f.Add([]byte(`{` + many.String() + `"k7":0}`))
	f.Add([]byte(`{` + many.String() + `"k99":0}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		got := checkJSONKeys(data, 6)
		want := refCheckKeys(data, 6)
		if got != nil && strings.Contains(got.Error(), "a key over") {
			return // a key over the bound: refused by checkJSONKeys alone
		}
		if (got == nil) != (want == nil) {
			t.Fatalf("checkJSONKeys(%q) = %v, the reference says %v", data, got, want)
		}
		if got != nil {
			return
		}
		members, ok := jsonMembers(data)
		var ref map[string]json.RawMessage
		refOK := json.Unmarshal(data, &ref) == nil && ref != nil
		if ok != refOK || len(members) != len(ref) {
			t.Fatalf("jsonMembers(%q) = %v, %v; encoding/json reads %v", data, members, ok, ref)
		}
		for k, v := range ref {
			if !bytes.Equal(members[k], v) {
				t.Fatalf("jsonMembers(%q)[%q] = %q, encoding/json reads %q", data, k, members[k], v)
			}
		}
	})
}

// TestJSONElements: the elements of an array as encoding/json reads them.
func TestJSONElements(t *testing.T) {
	for _, s := range []string{`[]`, `[ 1 , "a,]" , {"b":[2,3]} , [[]] , null ]`, `[{"type":"web_fetch_20250910"}]`} {
		got, ok := jsonElements([]byte(s))
		var want []json.RawMessage
		if err := json.Unmarshal([]byte(s), &want); err != nil || !ok || len(got) != len(want) {
			t.Fatalf("jsonElements(%s) = %q, %v; want %q", s, got, ok, want)
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Errorf("jsonElements(%s)[%d] = %q, want %q", s, i, got[i], want[i])
			}
		}
	}
	if _, ok := jsonElements([]byte(`{"a":1}`)); ok {
		t.Error("an object read as an array")
	}
}

// TestCheckModelBodyReadsInPlace: checking a 32 MiB body (one large base64 image, as a
// screenshot is sent) allocates next to nothing: two bodies in flight and their checks fit netd's
// 256 MiB (C17's budget), where encoding/json's decoder would hold several copies of each.
func TestCheckModelBodyReadsInPlace(t *testing.T) {
	body := []byte(`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64",` +
		`"media_type":"image/png","data":"` + strings.Repeat("A", maxModelRequest-300) + `"}}]}],"tools":[` + claudeCodeTool + `]}`)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if no := checkModelBody(body, false); no != nil {
		t.Fatalf("refused: %s", no.reason)
	}
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("checking a %d MiB body allocated %d KiB, want under 1 MiB", len(body)>>20, n>>10)
	}
}
