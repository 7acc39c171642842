package entity

import "reflect"

// MarshalJSON writes the entity in the Table service's JSON format, with
// `@odata.type` annotations, properties sorted by name. Unlike a Codec
// (whose output is a request body), it also writes a non-empty ETag as
// odata.etag and a non-zero Timestamp, so that UnmarshalJSON gives back the
// same Entity. Limits are checked as for any write.
func (e Entity) MarshalJSON() ([]byte, error) {
	var c Codec
	b, err := c.appendEntity(make([]byte, 0, 64+48*len(e.Properties)), &e, nil, nil)
	if err != nil {
		return nil, err
	}
	if e.ETag == "" && e.Timestamp.IsZero() {
		return b, nil
	}
	b = b[:len(b)-1]
	if e.ETag != "" {
		b = append(b, `,"odata.etag":`...)
		b, _, _ = appendString(b, e.ETag)
	}
	if !e.Timestamp.IsZero() {
		b = append(b, `,"Timestamp@odata.type":"Edm.DateTime","Timestamp":"`...)
		b = appendTime(b, e.Timestamp)
		b = append(b, '"')
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads an entity as the service returns it (minimal or full
// metadata), typing each property by its annotation or, without one, as
// the service types it.
func (e *Entity) UnmarshalJSON(data []byte) error {
	d, err := decodeEntity(data, nil)
	if err != nil {
		return err
	}
	*e = d
	return nil
}

type rawProp struct {
	name string
	kind byte
	raw  []byte
	esc  bool
}

// decodeEntity reads a row into an Entity. Annotations may come before or
// after their values.
func decodeEntity(data []byte, typ reflect.Type) (Entity, error) {
	var hasPK, hasRK bool
	return decodeEntityInto(data, typ, &hasPK, &hasRK)
}

// decodeEntityInto is decodeEntity that also records whether PartitionKey
// and RowKey were present.
func decodeEntityInto(data []byte, typ reflect.Type, hasPK, hasRK *bool) (Entity, error) {
	var e Entity
	fail := func(field, rule string, cause error) error {
		return &Error{Type: typ, Field: field, Rule: rule, Err: ErrInvalidEntity, Cause: cause}
	}
	s := scanner{b: data}
	if err := s.expect('{'); err != nil {
		return e, fail("", "cannot decode the entity", err)
	}
	var props []rawProp
	var anns map[string]EDMType
	if s.peek() == '}' {
		s.i++
	} else {
		for {
			if s.peek() != '"' {
				return e, fail("", "cannot decode the entity", s.fail("want a property name"))
			}
			kb, esc, err := s.str()
			if err != nil {
				return e, fail("", "cannot decode the entity", err)
			}
			if esc {
				kb = unescape(nil, kb)
			}
			key := string(kb)
			if err := s.expect(':'); err != nil {
				return e, fail("", "cannot decode the entity", err)
			}
			kind, raw, esc, err := s.value()
			if err != nil {
				return e, fail("", "cannot decode the entity", err)
			}
			str := func() (string, error) {
				if kind != jString {
					return "", fail(key, "want a JSON string, found "+kindName(kind), nil)
				}
				if esc {
					return string(unescape(nil, raw)), nil
				}
				return string(raw), nil
			}
			switch {
			case key == "PartitionKey":
				if e.PartitionKey, err = str(); err != nil {
					return e, err
				}
				*hasPK = true
			case key == "RowKey":
				if e.RowKey, err = str(); err != nil {
					return e, err
				}
				*hasRK = true
			case key == "odata.etag":
				if e.ETag, err = str(); err != nil {
					return e, err
				}
			case key == "Timestamp" && kind == jNull:
				// A client's null Timestamp says nothing: the service
				// sets it (Azure answers such an insert 204).
			case key == "Timestamp":
				ts, err := str()
				if err != nil {
					return e, err
				}
				if e.Timestamp, err = parseTime([]byte(ts)); err != nil {
					return e, fail(key, "cannot decode DateTime", err)
				}
			case len(key) > 11 && key[len(key)-11:] == "@odata.type":
				t, err := str()
				if err != nil {
					return e, err
				}
				if anns == nil {
					anns = map[string]EDMType{}
				}
				anns[key[:len(key)-11]] = EDMType(t)
			case len(key) > 6 && key[:6] == "odata.", kind == jNull:
			default:
				props = append(props, rawProp{key, kind, raw, esc})
			}
			if c := s.peek(); c == ',' {
				s.i++
				continue
			} else if c == '}' {
				s.i++
				break
			}
			return e, fail("", "cannot decode the entity", s.fail("want ',' or '}'"))
		}
	}
	if err := s.end(); err != nil {
		return e, fail("", "cannot decode the entity", err)
	}
	if len(props) > 0 {
		e.Properties = make(map[string]Value, len(props))
	}
	for _, p := range props {
		v, err := wireValue(anns[p.name], p.kind, p.raw, p.esc)
		if err != nil {
			return e, fail(p.name, "cannot decode the property", err)
		}
		e.Properties[p.name] = v
	}
	return e, nil
}

// Get returns the named property and whether it is present.
func (e *Entity) Get(name string) (Value, bool) {
	v, ok := e.Properties[name]
	return v, ok
}

// Set sets the named property, allocating Properties if needed.
func (e *Entity) Set(name string, v Value) {
	if e.Properties == nil {
		e.Properties = map[string]Value{}
	}
	e.Properties[name] = v
}
