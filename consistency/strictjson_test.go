package consistency

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// strictDecoder is what the worker decoded every envelope and step's
// arguments with before decodeKnown: the verdict decodeKnown must match.
func strictDecoder(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// knownOrDecoder is decodeKnown with the Decoder behind it, as
// decodeEnvelope and Call.Decode use it.
func knownOrDecoder(data []byte, v any) error {
	if decodeKnown(data, v) {
		return nil
	}
	return strictDecoder(data, v)
}

// agreesWithDecoder checks that decodeKnown, with the Decoder behind it,
// accepts exactly what the Decoder accepts and decodes it alike, for the
// envelope and the arguments of the built-in steps.
func agreesWithDecoder(t *testing.T, data []byte) {
	t.Helper()
	for _, newV := range []func() any{
		func() any { return new(envelope) },
		func() any { return new(UpsertEntityArgs) },
		func() any { return new(MoveEntityArgs) },
		func() any { return new(EntityRef) },
		func() any { return new(SyncCopiesArgs) },
		func() any { return new(map[string]any) },
	} {
		want, got := newV(), newV()
		werr := strictDecoder(data, want)
		gerr := knownOrDecoder(data, got)
		if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
			t.Fatalf("%T of %s: decodeKnown says %v, the Decoder %v", want, data, gerr, werr)
		}
		if werr == nil && !reflect.DeepEqual(want, got) {
			t.Fatalf("%T of %s: decoded %+v, the Decoder %+v", want, data, got, want)
		}
	}
}

// TestDecodeKnownAgreesWithDecoder: the worker's fast decoding of
// envelopes and arguments rejects an unknown field wherever it is (top
// level, a step, a blob reference, a nested reference), accepts the keys
// encoding/json matches without regard to case, and leaves every other
// case to the Decoder, with the same errors.
func TestDecodeKnownAgreesWithDecoder(t *testing.T) {
	for _, s := range []string{
		`{"v":1,"id":"t1","steps":[{"kind":"upsert-entity","args":{"table":"T","entity":{"PartitionKey":"p","RowKey":"r","x":"}]\"{"}}}]}`,
		`{"v":1,"id":"t1","steps":[{"kind":"k","args":{}}],"extra":1}`,
		`{"v":1,"id":"t1","steps":[{"kind":"k","extra":{}}]}`,
		`{"v":1,"id":"t1","blob":{"container":"c","name":"n","x":1}}`,
		`{"v":1,"id":"t1","blob":null,"steps":null}`,
		`{"V":1,"ID":"t1","Steps":[{"KIND":"k"}]}`,
		`{"v":1,"\u0069d":"t1"}`,
		`{"v":1,"\u0078":"t1"}`,
		`{"v":1,"id":"t1"} trailing`,
		`{"v":1,"id":"t1"} {"v":2}`,
		` { "v" : 1 , "id" : "t1" , "steps" : [ { "kind" : "k" , "args" : { "a" : [ 1 , { "b" : null } ] } } ] } `,
		`{"v":"one"}`,
		`{"table":"T","entity":{"PartitionKey":"p"},"mode":"merge"}`,
		`{"table":"T","entity":{},"mode":"sideways"}`,
		`{"table":"T","entity":{},"Mode":"merge","Table":"U"}`,
		`{"from":{"table":"A","pk":"p","rk":"r"},"to":{"table":"B","pk":"","rk":"","etag":"x"}}`,
		`{"from":{"table":"A","pk":"p","rk":"r"},"to":{"table":"B"},"missingOk":true}`,
		`{"table":"T","pk":"p","rk":"r"}`,
		`{"table":"T","pk":"p","rk":"r","rk2":"s"}`,
		`[]`, `null`, `"x"`, `{`, ``, `{"a":"\"}"}`,
	} {
		agreesWithDecoder(t, []byte(s))
	}
}

// FuzzDecodeKnown: on any input, decodeKnown with the Decoder behind it
// gives the Decoder's verdict and value.
func FuzzDecodeKnown(f *testing.F) {
	f.Add([]byte(`{"v":1,"id":"t1","steps":[{"kind":"upsert-entity","args":{"table":"T","entity":{}}}]}`))
	f.Add([]byte(`{"v":1,"id":"t1","blob":{"container":"c","name":"n"}}`))
	f.Add([]byte(`{"from":{"table":"A","pk":"p","rk":"r"},"to":{"table":"B","x":1}}`))
	f.Fuzz(func(t *testing.T, data []byte) { agreesWithDecoder(t, data) })
}
