package entity

import (
	"encoding"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tablekit/tablekit/azrules"
)

// kind is how a field is encoded and decoded, chosen once per field.
type kind uint8

const (
	kString kind = iota + 1
	kBool
	kInt    // signed integers
	kUint   // unsigned integers
	kFloat  // float32, float64
	kTime   // time.Time
	kGUID   // any [16]byte-based type
	kBinary // []byte-based types
	kText   // encoding.TextMarshaler / TextUnmarshaler
	kJSON   // the `json` option: encoding/json text in a String property
	kHook   // PropertyMarshaler / PropertyUnmarshaler
)

type role uint8

const (
	roleNone role = iota
	rolePK
	roleRK
	roleETag
	roleTimestamp
)

var roleNames = [...]string{"", "PartitionKey", "RowKey", "ETag", "Timestamp"}

// field is the plan of one struct field.
type field struct {
	name      string // wire name
	goName    string // Go field path, for errors
	index     []int
	typ       reflect.Type // declared type
	elem      reflect.Type // typ without its pointer
	ptr       bool
	kind      kind
	edm       EDMType // fixed EDM type ("" for kText/kHook/kJSON use String, kHook decides at run time)
	bits      int     // size of integer and float kinds
	omitEmpty bool
	encrypt   bool
	role      role
	addr      bool // methods need an addressable value (pointer receivers)

	// fast fields (a bool, number, string or time.Time reached without
	// a pointer, not encrypted) are decoded by a write at offset from the
	// struct's address instead of through reflect.
	fast   bool
	offset uintptr

	key      []byte // `"Name":`
	ann      []byte // `"Name@odata.type":"Edm.X",` (nil when the type needs no annotation)
	nameSize int    // 8 + 2 * UTF-16 length of the name: the size formula's per-property overhead
}

// plan is the cached, options-independent codec of one struct type.
type plan struct {
	typ        reflect.Type
	fields     []*field
	byName     map[string]*field
	pk, rk     *field
	etag, ts   *field
	encrypted  bool
	needAddr   bool
	hookM      bool // T or *T implements EntityMarshaler
	hookMPtr   bool // ... only through *T
	hookU      bool // *T implements EntityUnmarshaler
	propHooks  bool // a field is a PropertyUnmarshaler: the decoder reads annotations for it
	selectList []string
	blobs      []BlobField // fields the codec leaves to a repository that keeps them in blobs

	// When the keys and every property are fast fields, DataSize is
	// sizeFixed (16 bytes a field) plus the lengths of the strings at
	// sizeStrings, with no walk over the fields (see planSize).
	sizeFast    bool
	sizeFixed   int
	sizeStrings []uintptr
}

type planResult struct {
	p   *plan
	err error
}

var planCache sync.Map // reflect.Type -> *planResult

var (
	timeType            = reflect.TypeFor[time.Time]()
	textMarshalerType   = reflect.TypeFor[encoding.TextMarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	propMarshalerType   = reflect.TypeFor[PropertyMarshaler]()
	propUnmarshalerType = reflect.TypeFor[PropertyUnmarshaler]()
	entMarshalerType    = reflect.TypeFor[EntityMarshaler]()
	entUnmarshalerType  = reflect.TypeFor[EntityUnmarshaler]()
)

func planOf(t reflect.Type) (*plan, error) {
	if r, ok := planCache.Load(t); ok {
		r := r.(*planResult)
		return r.p, r.err
	}
	p, err := buildPlan(t)
	r, _ := planCache.LoadOrStore(t, &planResult{p, err})
	return r.(*planResult).p, r.(*planResult).err
}

// tagOptions are the parsed options of a `table` tag.
type tagOptions struct {
	name      string
	named     bool
	skip      bool
	omitEmpty bool
	json      bool
	encrypt   bool
	blob      bool
	role      role
}

func parseTag(t reflect.Type, goName, tag string) (tagOptions, error) {
	var o tagOptions
	if tag == "-" {
		o.skip = true
		return o, nil
	}
	parts := strings.Split(tag, ",")
	o.name = parts[0]
	o.named = o.name != ""
	for _, opt := range parts[1:] {
		r := roleNone
		switch opt {
		case "omitempty":
			o.omitEmpty = true
		case "json":
			o.json = true
		case "encrypt":
			o.encrypt = true
		case "blob":
			o.blob = true
		case "pk":
			r = rolePK
		case "rk":
			r = roleRK
		case "etag":
			r = roleETag
		case "timestamp":
			r = roleTimestamp
		case "":
			return o, errType(t, goName, "empty option in table tag "+strconv.Quote(tag))
		default:
			return o, errType(t, goName, "unknown option "+strconv.Quote(opt)+" in table tag "+strconv.Quote(tag)+
				" (known: omitempty, json, encrypt, blob, pk, rk, etag, timestamp)")
		}
		if r != roleNone {
			if o.role != roleNone && o.role != r {
				return o, errType(t, goName, "table tag "+strconv.Quote(tag)+" gives the field two roles")
			}
			o.role = r
		}
	}
	return o, nil
}

// candidate is a field found while walking a struct and its embedded structs.
type candidate struct {
	sf     reflect.StructField
	index  []int
	depth  int
	goName string
	opts   tagOptions
	name   string // wire name
}

func collect(root, t reflect.Type, index []int, prefix string, depth int, visiting map[reflect.Type]bool, out *[]candidate, blobs *[]BlobField) error {
	visiting[t] = true
	defer delete(visiting, t)
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		goName := prefix + sf.Name
		tag, hasTag := sf.Tag.Lookup("table")
		opts, err := parseTag(root, goName, tag)
		if err != nil {
			return err
		}
		if !hasTag {
			opts = tagOptions{}
		}
		if opts.skip {
			continue
		}
		idx := make([]int, len(index)+1)
		copy(idx, index)
		idx[len(index)] = i
		if sf.Anonymous && !opts.named {
			ft := sf.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct && !opts.json && opts.role == roleNone {
				if !sf.IsExported() && sf.Type.Kind() == reflect.Pointer {
					// encoding/json cannot set promoted fields through an
					// unexported embedded pointer; neither can we.
					continue
				}
				if visiting[ft] {
					continue
				}
				if err := collect(root, ft, idx, goName+".", depth+1, visiting, out, blobs); err != nil {
					return err
				}
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		name := sf.Name
		if opts.named {
			name = opts.name
		}
		if opts.blob {
			if depth > 0 || sf.Anonymous || sf.Type != reflect.TypeFor[[]byte]() || opts.json || opts.encrypt || opts.omitEmpty || opts.role != roleNone {
				return errType(root, goName, "the blob option needs a top-level []byte field and no other option (tag "+strconv.Quote(tag)+")")
			}
			*blobs = append(*blobs, BlobField{GoName: goName, Index: i, Property: name})
			continue
		}
		*out = append(*out, candidate{sf: sf, index: idx, depth: depth, goName: goName, opts: opts, name: name})
	}
	return nil
}

func buildPlan(t reflect.Type) (*plan, error) {
	if t.Kind() != reflect.Struct {
		return nil, errType(t, "", "the codec maps struct types (and pointers to them) only")
	}
	p := &plan{typ: t, byName: map[string]*field{}}
	pt := reflect.PointerTo(t)
	p.hookM = t.Implements(entMarshalerType) || pt.Implements(entMarshalerType)
	p.hookMPtr = !t.Implements(entMarshalerType) && p.hookM
	p.hookU = pt.Implements(entUnmarshalerType)
	lenient := p.hookM && p.hookU // properties are the hooks' business

	var cands []candidate
	if err := collect(t, t, nil, "", 0, map[reflect.Type]bool{}, &cands, &p.blobs); err != nil {
		return nil, err
	}
	// Group by wire name (role fields by role), then pick the shallowest;
	// two at the same depth are a conflict, reported rather than dropped.
	type group struct {
		best     *candidate
		conflict *candidate
	}
	groups := map[string]*group{}
	var order []string
	for i := range cands {
		c := &cands[i]
		r := c.opts.role
		if r == roleNone {
			switch c.name {
			case "PartitionKey":
				r = rolePK
			case "RowKey":
				r = roleRK
			case "ETag":
				r = roleETag
			case "Timestamp":
				r = roleTimestamp
			}
			c.opts.role = r
		}
		key := c.name
		if r != roleNone {
			key = "\x00" + roleNames[r]
		}
		g := groups[key]
		if g == nil {
			groups[key] = &group{best: c}
			order = append(order, key)
			continue
		}
		switch {
		case c.depth < g.best.depth:
			g.best, g.conflict = c, nil
		case c.depth == g.best.depth:
			g.conflict = c
		}
	}
	for _, key := range order {
		g := groups[key]
		if g.conflict != nil {
			what := "property " + strconv.Quote(g.best.name)
			if key[0] == 0 {
				what = "the " + key[1:] + " role"
			}
			return nil, errType(t, g.best.goName, "conflicts with "+g.conflict.goName+": both map to "+what+" at the same depth")
		}
		c := g.best
		f, err := buildField(t, c, lenient)
		if err != nil {
			return nil, err
		}
		if f == nil {
			continue
		}
		f.offset, f.fast = directOffset(t, f.index)
		f.fast = f.fast && !f.ptr && !f.encrypt && (f.kind == kString || f.kind == kBool || f.kind == kInt || f.kind == kUint || f.kind == kFloat || f.kind == kTime)
		switch f.role {
		case rolePK:
			p.pk = f
		case roleRK:
			p.rk = f
		case roleETag:
			p.etag = f
		case roleTimestamp:
			p.ts = f
		default:
			if lenient {
				continue
			}
			p.fields = append(p.fields, f)
			p.byName[f.name] = f
			if f.encrypt {
				p.encrypted = true
			}
		}
		if f.addr {
			p.needAddr = true
		}
		if f.kind == kHook {
			p.propHooks = true
		}
	}
	if !p.hookM && (p.pk == nil || p.rk == nil) {
		missing := "PartitionKey"
		if p.pk != nil {
			missing = "RowKey"
		}
		return nil, errType(t, "", "no "+missing+" field: name a string field "+missing+" or tag one `table:\",pk\"`/`table:\",rk\"`")
	}
	if len(p.fields) > MaxProperties {
		return nil, errType(t, "", "has "+strconv.Itoa(len(p.fields))+" properties; the Table service allows at most 252 custom properties")
	}
	p.selectList = append(p.selectList, "PartitionKey", "RowKey", "Timestamp")
	for _, f := range p.fields {
		p.selectList = append(p.selectList, f.name)
	}
	p.planSize()
	return p, nil
}

// planSize sets sizeFast, sizeFixed and sizeStrings when every field
// DataSize counts is fast: the keys and the properties.
func (p *plan) planSize() {
	if p.hookM || p.pk == nil || p.rk == nil {
		return
	}
	fixed, strs := 0, []uintptr(nil)
	for _, f := range append([]*field{p.pk, p.rk}, p.fields...) {
		if !f.fast {
			return
		}
		fixed += 16
		if f.kind == kString {
			strs = append(strs, f.offset)
		}
	}
	p.sizeFast, p.sizeFixed, p.sizeStrings = true, fixed, strs
}

// directOffset is the offset of the field at index in struct t, and
// whether the path to it has no pointer (embedded structs by value only).
func directOffset(t reflect.Type, index []int) (uintptr, bool) {
	var off uintptr
	for i, x := range index {
		if i > 0 && t.Kind() != reflect.Struct {
			return 0, false // an embedded *Struct
		}
		sf := t.Field(x)
		off += sf.Offset
		t = sf.Type
	}
	return off, true
}

func buildField(t reflect.Type, c *candidate, lenient bool) (*field, error) {
	f := &field{
		name:      c.name,
		goName:    c.goName,
		index:     c.index,
		typ:       c.sf.Type,
		elem:      c.sf.Type,
		omitEmpty: c.opts.omitEmpty,
		encrypt:   c.opts.encrypt,
		role:      c.opts.role,
	}
	if f.elem.Kind() == reflect.Pointer {
		f.ptr = true
		f.elem = f.elem.Elem()
	}
	if f.role != roleNone {
		if c.opts.json || c.opts.encrypt || c.opts.omitEmpty {
			return nil, errType(t, f.goName, "the "+roleNames[f.role]+" field takes no json, encrypt or omitempty option")
		}
		if f.role == roleTimestamp {
			if f.typ != timeType {
				return nil, errType(t, f.goName, "the Timestamp field must be a time.Time, not "+f.typ.String())
			}
			f.kind = kTime
			return f, nil
		}
		if f.typ.Kind() != reflect.String {
			return nil, errType(t, f.goName, "the "+roleNames[f.role]+" field must be a string type, not "+f.typ.String())
		}
		f.kind = kString
		return f, nil
	}
	if err := checkPropertyName(c.name); err != nil {
		if lenient {
			return nil, nil
		}
		return nil, errCause(t, f.goName, "invalid property name "+strconv.Quote(c.name), err)
	}
	if f.ptr && f.elem.Kind() == reflect.Pointer {
		if lenient {
			return nil, nil
		}
		return nil, errType(t, f.goName, "unsupported type "+f.typ.String()+": pointers to pointers")
	}
	if err := classify(t, f, c.opts.json); err != nil {
		if lenient {
			return nil, nil
		}
		return nil, err
	}
	f.key = append(strconv.AppendQuote(nil, f.name), ':')
	if f.edm != "" && f.edm != EdmString && f.edm != EdmInt32 && f.edm != EdmBoolean {
		f.ann = annotation(f.name, f.edm)
	}
	if f.encrypt {
		f.ann = annotation(f.name, EdmBinary)
	}
	f.nameSize = 8 + 2*azrules.UTF16Len(f.name)
	return f, nil
}

func annotation(name string, edm EDMType) []byte {
	b := strconv.AppendQuote(nil, name+"@odata.type")
	b = append(b, ':')
	b = strconv.AppendQuote(b, string(edm))
	return append(b, ',')
}

func implements(t reflect.Type, iface reflect.Type) (ok, viaPtr bool) {
	if t.Implements(iface) {
		return true, false
	}
	if reflect.PointerTo(t).Implements(iface) {
		return true, true
	}
	return false, false
}

func classify(t reflect.Type, f *field, asJSON bool) error {
	e := f.elem
	if asJSON {
		f.kind, f.edm = kJSON, EdmString
		return nil
	}
	if ok, viaPtr := implements(e, propMarshalerType); ok {
		if !reflect.PointerTo(e).Implements(propUnmarshalerType) {
			return errType(t, f.goName, e.String()+" implements PropertyMarshaler but *"+e.String()+" does not implement PropertyUnmarshaler")
		}
		f.kind, f.addr = kHook, viaPtr && !f.ptr
		return nil
	}
	if e == timeType {
		// Read through a pointer: boxing a time.Time would allocate.
		f.kind, f.edm, f.addr = kTime, EdmDateTime, !f.ptr
		return nil
	}
	if e.Kind() == reflect.Array && e.Len() == 16 && e.Elem().Kind() == reflect.Uint8 {
		f.kind, f.edm = kGUID, EdmGuid
		return nil
	}
	if ok, viaPtr := implements(e, textMarshalerType); ok {
		if reflect.PointerTo(e).Implements(textUnmarshalerType) {
			f.kind, f.edm, f.addr = kText, EdmString, viaPtr && !f.ptr
			return nil
		}
		if e.Kind() != reflect.String {
			return errType(t, f.goName, e.String()+" implements encoding.TextMarshaler but *"+e.String()+" does not implement encoding.TextUnmarshaler")
		}
	}
	switch e.Kind() {
	case reflect.String:
		f.kind, f.edm = kString, EdmString
	case reflect.Bool:
		f.kind, f.edm = kBool, EdmBoolean
	case reflect.Int8, reflect.Int16, reflect.Int32:
		f.kind, f.edm, f.bits = kInt, EdmInt32, e.Bits()
	case reflect.Int, reflect.Int64:
		f.kind, f.edm, f.bits = kInt, EdmInt64, e.Bits()
	case reflect.Uint8, reflect.Uint16:
		f.kind, f.edm, f.bits = kUint, EdmInt32, e.Bits()
	case reflect.Uint32, reflect.Uint, reflect.Uint64, reflect.Uintptr:
		f.kind, f.edm, f.bits = kUint, EdmInt64, e.Bits()
	case reflect.Float32, reflect.Float64:
		f.kind, f.edm, f.bits = kFloat, EdmDouble, e.Bits()
	case reflect.Slice:
		if e.Elem().Kind() == reflect.Uint8 {
			f.kind, f.edm = kBinary, EdmBinary
			return nil
		}
		fallthrough
	default:
		return errType(t, f.goName, "unsupported type "+f.typ.String()+
			" (store it with the json option, or implement PropertyMarshaler/PropertyUnmarshaler)")
	}
	return nil
}

// checkPropertyName applies the Table service's rules to a custom property
// name (azrules.CheckPropertyName: a C# identifier of at most 255 UTF-16
// code units) and refuses the system property names.
func checkPropertyName(name string) error {
	if err := azrules.CheckPropertyName(name); err != nil {
		return err
	}
	if azrules.IsSystemProperty(name) {
		return errRule(name + " is a system property name")
	}
	return nil
}

type ruleError string

func (e ruleError) Error() string { return string(e) }

func errRule(s string) error { return ruleError(s) }
