package gateway

import (
	"reflect"
	"testing"

	"github.com/aboxhq/abox/internal/manifest"
)

// TestRemoteMirrorsManifest: Remote and Secret repeat the manifest's RemoteServer and SecretEnv
// field for field (see [Remote] for why they are not the same type). A field added to the
// manifest and not here would be dropped from the binding, and so from the gateway's catalog,
// without an error; this test makes that a failure.
func TestRemoteMirrorsManifest(t *testing.T) {
	for _, pair := range []struct{ bound, decl reflect.Type }{
		{reflect.TypeFor[Remote](), reflect.TypeFor[manifest.RemoteServer]()},
		{reflect.TypeFor[Secret](), reflect.TypeFor[manifest.SecretEnv]()},
	} {
		if pair.bound.NumField() != pair.decl.NumField() {
			t.Errorf("%s has %d fields, %s has %d: keep them the same", pair.bound, pair.bound.NumField(), pair.decl, pair.decl.NumField())
			continue
		}
		for i := range pair.bound.NumField() {
			b, d := pair.bound.Field(i), pair.decl.Field(i)
			if b.Name != d.Name {
				t.Errorf("%s field %d is %s, %s's is %s", pair.bound, i, b.Name, pair.decl, d.Name)
			}
			if b.Tag.Get("json") == "" {
				t.Errorf("%s.%s has no json tag: registry.json would spell it as Go does", pair.bound, b.Name)
			}
		}
	}
	// Secret must convert from SecretEnv as it is: the binding copies with a conversion.
	if !reflect.TypeFor[manifest.SecretEnv]().ConvertibleTo(reflect.TypeFor[Secret]()) {
		t.Error("manifest.SecretEnv does not convert to Secret")
	}
}

// TestRemoteRoundTrip: a remote server with every field set, whatever fields it has, comes out
// of the binding, and back out of it into the catalog's manifest, unchanged; an empty transport
// comes back defaulted.
func TestRemoteRoundTrip(t *testing.T) {
	var rs manifest.RemoteServer
	fill(t, reflect.ValueOf(&rs).Elem())
	if back := bindRemote(rs).declaration(); !reflect.DeepEqual(back, rs) {
		t.Errorf("binding and back lost a field:\n got %+v\nwant %+v", back, rs)
	}
	rs.Transport = ""
	if got := bindRemote(rs).Transport; got != manifest.DefaultTransport {
		t.Errorf("bindRemote(no transport).Transport = %q, want %q", got, manifest.DefaultTransport)
	}
}

// fill sets every field of the struct v to a distinct non-zero value.
func fill(t *testing.T, v reflect.Value) {
	t.Helper()
	for i := range v.NumField() {
		f, name := v.Field(i), v.Type().Field(i).Name
		switch f.Kind() {
		case reflect.String:
			f.SetString("value of " + name)
		case reflect.Map:
			m := reflect.MakeMap(f.Type())
			m.SetMapIndex(reflect.ValueOf("key of "+name), reflect.ValueOf("value of "+name))
			f.Set(m)
		case reflect.Slice:
			e := reflect.New(f.Type().Elem()).Elem()
			fill(t, e)
			f.Set(reflect.Append(f, e))
		default:
			t.Fatalf("fill: field %s is a %s: teach fill to set it", name, f.Kind())
		}
	}
}
