package entity

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"sync"
	"time"
)

// KeyProvider supplies the AES-256 keys of client-side property encryption
// (the guide's "Encrypt table data"). Each sealed value stores the id of
// the key that sealed it, so keys rotate: new writes use the current key,
// and values sealed under older keys still open as long as the provider
// returns those keys by id.
type KeyProvider interface {
	// CurrentKey returns the id and the 32-byte key new values are sealed
	// with. The id is at most 255 bytes.
	CurrentKey() (id string, key []byte, err error)
	// Key returns the 32-byte key with the given id.
	Key(id string) ([]byte, error)
}

// KeyRing is a KeyProvider over keys held in memory.
type KeyRing struct {
	Current string            // id of the key new values are sealed with
	Keys    map[string][]byte // every key that may still be needed to open values, by id
}

// CurrentKey implements KeyProvider.
func (k *KeyRing) CurrentKey() (string, []byte, error) {
	key, err := k.Key(k.Current)
	return k.Current, key, err
}

// Key implements KeyProvider.
func (k *KeyRing) Key(id string) ([]byte, error) {
	key, ok := k.Keys[id]
	if !ok {
		return nil, errors.New("no key with id " + strconv.Quote(id))
	}
	return key, nil
}

// Sealed value layout, stored as an Edm.Binary property under the field's
// own name:
//
//	version (1 byte, 1) | len(key id) (1 byte) | key id | nonce (12 bytes) | AES-256-GCM(plaintext) with its 16-byte tag
//
// The plaintext is one byte naming the value's EDM type followed by the
// value's JSON text, so any field type can be encrypted. The additional
// authenticated data binds the ciphertext to the property name (a value
// moved to another property does not open); it does not bind the keys, so
// that entities may be copied under new keys (index and denormalized
// copies) without being re-encrypted.
const sealVersion = 1

var edmCodes = []EDMType{"", EdmString, EdmInt32, EdmInt64, EdmDouble, EdmBoolean, EdmDateTime, EdmGuid, EdmBinary}

func edmCode(t EDMType) byte {
	for i, e := range edmCodes {
		if e == t {
			return byte(i)
		}
	}
	return 0
}

var aeadCache sync.Map // string(key) -> cipher.AEAD

func aeadFor(key []byte) (cipher.AEAD, error) {
	if a, ok := aeadCache.Load(string(key)); ok {
		return a.(cipher.AEAD), nil
	}
	if len(key) != 32 {
		return nil, errors.New("keys are 32 bytes (AES-256), this one has " + strconv.Itoa(len(key)))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	a, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	aeadCache.Store(string(key), a)
	return a, nil
}

func aad(name string) []byte { return append([]byte("tablekit-entity-v1\x00"), name...) }

func (en *encoder) appendEncrypted(dst []byte, f *field, fv reflect.Value) ([]byte, error) {
	v, err := fieldValue(f, fv)
	if err != nil {
		return dst, en.fail(f, err.Error(), nil)
	}
	if v.Type == "" {
		return dst, nil
	}
	kp := en.c.keys
	if kp == nil {
		return dst, en.fail(f, "is tagged encrypt but the codec has no KeyProvider (Options.Keys)", nil)
	}
	id, key, err := kp.CurrentKey()
	if err != nil {
		return dst, en.fail(f, "KeyProvider.CurrentKey failed", err)
	}
	if len(id) > 255 {
		return dst, en.fail(f, "key ids are at most 255 bytes", nil)
	}
	a, err := aeadFor(key)
	if err != nil {
		return dst, en.fail(f, "bad key "+strconv.Quote(id), err)
	}
	plain := []byte{edmCode(v.Type)}
	plain, _, err = appendBareValue(plain, v)
	if err != nil {
		return dst, en.fail(f, err.Error(), nil)
	}
	sealed := make([]byte, 0, 2+len(id)+a.NonceSize()+len(plain)+a.Overhead())
	sealed = append(sealed, sealVersion, byte(len(id)))
	sealed = append(sealed, id...)
	nonce := sealed[len(sealed) : len(sealed)+a.NonceSize()]
	if _, err := rand.Read(nonce); err != nil {
		return dst, en.fail(f, "no randomness for the nonce", err)
	}
	sealed = sealed[:len(sealed)+a.NonceSize()]
	sealed = a.Seal(sealed, nonce, plain, aad(f.name))
	if len(sealed) > MaxBinarySize {
		return dst, en.fail(f, strconv.Itoa(len(sealed))+" bytes once encrypted; Binary values are at most 65536 bytes (rule: binary size)", nil)
	}
	dst = append(dst, ',')
	dst = append(dst, f.ann...)
	dst = append(dst, f.key...)
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, sealed)
	dst = append(dst, '"')
	en.count++
	en.size += f.nameSize + 4 + len(sealed)
	return dst, nil
}

// fieldValue converts a (non-nil, dereferenced) field to its dynamic
// Value; Type is "" when the field stores nothing.
func fieldValue(f *field, fv reflect.Value) (Value, error) {
	switch f.kind {
	case kString:
		return String(fv.String()), nil
	case kBool:
		return Bool(fv.Bool()), nil
	case kInt:
		if f.edm == EdmInt32 {
			return Int32(int32(fv.Int())), nil
		}
		return Int64(fv.Int()), nil
	case kUint:
		u := fv.Uint()
		if f.edm == EdmInt32 {
			return Int32(int32(u)), nil
		}
		if u > 1<<63-1 {
			return Value{}, errRule(strconv.FormatUint(u, 10) + " overflows Edm.Int64 (rule: Int64 range)")
		}
		return Int64(int64(u)), nil
	case kFloat:
		return Double(fv.Float()), nil
	case kTime:
		t := fv.Interface().(time.Time)
		if t.IsZero() {
			return Value{}, nil
		}
		return DateTime(t), nil
	case kGUID:
		var g GUID
		for i := range g {
			g[i] = byte(fv.Index(i).Uint())
		}
		return Guid(g), nil
	case kBinary:
		if fv.IsNil() {
			return Value{}, nil
		}
		return Binary(fv.Bytes()), nil
	case kText:
		var m interface{ MarshalText() ([]byte, error) }
		if f.addr {
			m = fv.Addr().Interface().(interface{ MarshalText() ([]byte, error) })
		} else {
			m = fv.Interface().(interface{ MarshalText() ([]byte, error) })
		}
		text, err := m.MarshalText()
		if err != nil {
			return Value{}, err
		}
		return String(string(text)), nil
	case kJSON:
		switch fv.Kind() {
		case reflect.Slice, reflect.Map, reflect.Interface:
			if fv.IsNil() {
				return Value{}, nil
			}
		}
		text, err := json.Marshal(fv.Interface())
		if err != nil {
			return Value{}, err
		}
		return String(string(text)), nil
	case kHook:
		var m PropertyMarshaler
		if f.addr {
			m = fv.Addr().Interface().(PropertyMarshaler)
		} else {
			m = fv.Interface().(PropertyMarshaler)
		}
		return m.MarshalProperty()
	}
	return Value{}, errRule("unsupported field kind")
}

// open decrypts a sealed value of property name, returning the EDM type
// and the JSON text of the value.
func (c *Codec) open(name string, sealed []byte) (EDMType, []byte, error) {
	if len(sealed) < 2 || sealed[0] != sealVersion {
		return "", nil, errors.New("not a sealed value (unknown format version)")
	}
	idLen := int(sealed[1])
	if len(sealed) < 2+idLen {
		return "", nil, errors.New("truncated sealed value")
	}
	id := string(sealed[2 : 2+idLen])
	if c.keys == nil {
		return "", nil, errors.New("the codec has no KeyProvider (Options.Keys)")
	}
	key, err := c.keys.Key(id)
	if err != nil {
		return "", nil, err
	}
	a, err := aeadFor(key)
	if err != nil {
		return "", nil, err
	}
	rest := sealed[2+idLen:]
	if len(rest) < a.NonceSize()+a.Overhead() {
		return "", nil, errors.New("truncated sealed value")
	}
	plain, err := a.Open(nil, rest[:a.NonceSize()], rest[a.NonceSize():], aad(name))
	if err != nil {
		return "", nil, errors.New("authentication failed under key " + strconv.Quote(id) + ": the value was altered, moved or sealed with another key")
	}
	if len(plain) < 1 || int(plain[0]) >= len(edmCodes) || plain[0] == 0 {
		return "", nil, errors.New("unknown EDM type in sealed value")
	}
	return edmCodes[plain[0]], plain[1:], nil
}
