package entity_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/entity"
)

type Patient struct {
	PartitionKey, RowKey string
	Name                 string
	SSN                  string    `table:"SSN,encrypt"`
	Born                 time.Time `table:",encrypt"`
	Score                *int64    `table:",encrypt"`
}

func key(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

func patientCodec(t *testing.T, kp entity.KeyProvider) *entity.Codec {
	t.Helper()
	c, err := entity.CodecOf(reflect.TypeOf(Patient{}), &entity.Options{Keys: kp})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestEncryptionRoundTripAndRotation(t *testing.T) {
	ring := &entity.KeyRing{Current: "k1", Keys: map[string][]byte{"k1": key(1)}}
	c := patientCodec(t, ring)
	if !c.Encrypted() {
		t.Error("Encrypted() = false")
	}
	in := Patient{PartitionKey: "p", RowKey: "r", Name: "Ann", SSN: "123-45-6789",
		Born: time.Date(1980, 1, 2, 3, 4, 5, 0, time.UTC), Score: ptr(int64(-7))}
	old, err := c.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(old, []byte("6789")) || !bytes.Contains(old, []byte(`"SSN@odata.type":"Edm.Binary"`)) {
		t.Errorf("SSN not sealed as Binary: %s", old)
	}
	var out Patient
	if err := c.Unmarshal(old, &out); err != nil || !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip: %#v, %v", out, err)
	}
	// Rotate: new writes use k2, values sealed under k1 still open.
	ring.Keys["k2"], ring.Current = key(2), "k2"
	fresh, err := c.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range [][]byte{old, fresh} {
		out = Patient{}
		if err := c.Unmarshal(row, &out); err != nil || out.SSN != in.SSN {
			t.Errorf("after rotation: %#v, %v", out, err)
		}
	}
	// Once k1 is retired, old rows fail with ErrDecrypt.
	delete(ring.Keys, "k1")
	if err := c.Unmarshal(old, &out); !errors.Is(err, entity.ErrDecrypt) || !strings.Contains(err.Error(), "Patient.SSN") {
		t.Errorf("retired key: %v", err)
	}
}

func TestEncryptionTamperDetection(t *testing.T) {
	c := patientCodec(t, &entity.KeyRing{Current: "k", Keys: map[string][]byte{"k": key(9)}})
	b, err := c.Marshal(Patient{PartitionKey: "p", RowKey: "r", SSN: "secret"})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	sealed, _ := base64.StdEncoding.DecodeString(m["SSN"].(string))
	flip := func(i int) []byte {
		x := bytes.Clone(sealed)
		x[i] ^= 1
		m2 := map[string]any{}
		for k, v := range m {
			m2[k] = v
		}
		m2["SSN"] = base64.StdEncoding.EncodeToString(x)
		out, _ := json.Marshal(m2)
		return out
	}
	for _, i := range []int{0, 1, 3, len(sealed) / 2, len(sealed) - 1} {
		var p Patient
		if err := c.Unmarshal(flip(i), &p); !errors.Is(err, entity.ErrDecrypt) || !errors.Is(err, entity.ErrInvalidEntity) {
			t.Errorf("byte %d flipped: %v", i, err)
		}
	}
	// A sealed value moved to another property does not open either.
	type Swapped struct {
		PartitionKey, RowKey string
		Other                string `table:",encrypt"`
	}
	moved := bytes.Replace(b, []byte(`"SSN`), []byte(`"Other`), 2)
	cs, _ := entity.CodecOf(reflect.TypeOf(Swapped{}), &entity.Options{Keys: &entity.KeyRing{Current: "k", Keys: map[string][]byte{"k": key(9)}}})
	var s Swapped
	if err := cs.Unmarshal(moved, &s); !errors.Is(err, entity.ErrDecrypt) {
		t.Errorf("moved value: %v", err)
	}
}

func TestEncryptionNeedsKeys(t *testing.T) {
	c := patientCodec(t, nil)
	if _, err := c.Marshal(Patient{PartitionKey: "p", RowKey: "r"}); !errors.Is(err, entity.ErrInvalidEntity) || !strings.Contains(err.Error(), "KeyProvider") {
		t.Errorf("no KeyProvider: %v", err)
	}
	bad := patientCodec(t, &entity.KeyRing{Current: "k", Keys: map[string][]byte{"k": key(1)[:16]}})
	if _, err := bad.Marshal(Patient{PartitionKey: "p", RowKey: "r"}); err == nil {
		t.Error("a 16-byte key was accepted for AES-256")
	}
}
