package entity

// PageReader reads the rows of a query response body,
// {"value":[{...},{...}],...}, one at a time and in one pass: Decode
// decodes the row under the reader straight from the body, so a page is
// never split into rows first and then scanned again.
//
//	r := entity.NewPageReader(body)
//	for r.Next() {
//		var v T
//		if err := r.Decode(codec, &v); err != nil { ... }
//	}
//	if err := r.Err(); err != nil { ... }
//
// A PageReader is not safe for concurrent use; Reset reuses one.
type PageReader struct {
	s       scanner
	state   int  // pageStart, pageRows, pageDone
	pending bool // a row starts at s.i and has not been read
	single  bool // the body is one row, not a page
	err     error
	dec     decoder // reused by Decode from row to row
}

const (
	pageStart = iota // before the "value" array
	pageRows         // inside it
	pageDone
)

// NewPageReader returns a reader of the rows of body (a query response).
func NewPageReader(body []byte) *PageReader {
	r := &PageReader{}
	r.Reset(body)
	return r
}

// Reset makes r read the rows of body.
func (r *PageReader) Reset(body []byte) {
	*r = PageReader{s: scanner{b: body}, dec: r.dec.reset()}
}

// ResetRow makes r read row (one entity object) as a page of one row.
func (r *PageReader) ResetRow(row []byte) {
	*r = PageReader{s: scanner{b: row}, single: true, dec: r.dec.reset()}
}

func pageError(err error) error {
	return &Error{Rule: "cannot decode the query page", Err: ErrInvalidEntity, Cause: err}
}

func (r *PageReader) stop(err error) bool {
	r.err, r.state, r.pending = err, pageDone, false
	return false
}

// Next moves to the next row, skipping the current one if it was not
// read; it returns false after the last row or at the first error (see
// Err).
func (r *PageReader) Next() bool {
	if r.state == pageDone {
		return false
	}
	s := &r.s
	if r.single {
		if r.state == pageRows {
			if r.pending {
				if err := s.skip(0); err != nil {
					return r.stop(pageError(err))
				}
				r.pending = false
			}
			return r.finish()
		}
		if s.peek() != '{' {
			return r.stop(pageError(s.fail("want an entity object")))
		}
		r.state, r.pending = pageRows, true
		return true
	}
	if r.pending {
		if err := s.skip(0); err != nil {
			return r.stop(pageError(err))
		}
		r.pending = false
	}
	if r.state == pageStart {
		if err := s.expect('{'); err != nil {
			return r.stop(pageError(err))
		}
		if s.peek() == '}' {
			s.i++
			return r.finish()
		}
		return r.members()
	}
	switch s.peek() {
	case ',':
		s.i++
		return r.row()
	case ']':
		s.i++
		return r.afterMember()
	}
	return r.stop(pageError(s.fail("want ',' or ']'")))
}

// members reads the page's members up to the first row of "value" or the
// end of the page.
func (r *PageReader) members() bool {
	s := &r.s
	for {
		if s.peek() != '"' {
			return r.stop(pageError(s.fail("want a member name")))
		}
		key, _, err := s.str()
		if err == nil {
			err = s.expect(':')
		}
		if err != nil {
			return r.stop(pageError(err))
		}
		if string(key) == "value" && s.peek() == '[' {
			s.i++
			if s.peek() != ']' {
				r.state = pageRows
				return r.row()
			}
			s.i++
		} else if _, _, _, err := s.value(); err != nil {
			return r.stop(pageError(err))
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return r.finish()
		default:
			return r.stop(pageError(s.fail("want ',' or '}'")))
		}
	}
}

// afterMember continues after the "value" array.
func (r *PageReader) afterMember() bool {
	s := &r.s
	switch s.peek() {
	case ',':
		s.i++
		return r.members()
	case '}':
		s.i++
		return r.finish()
	}
	return r.stop(pageError(s.fail("want ',' or '}'")))
}

func (r *PageReader) row() bool {
	if r.s.peek() != '{' {
		return r.stop(pageError(r.s.fail("want an entity object")))
	}
	r.pending = true
	return true
}

func (r *PageReader) finish() bool {
	if err := r.s.end(); err != nil {
		return r.stop(pageError(err))
	}
	r.state = pageDone
	return false
}

// Raw returns the current row's JSON, aliasing the body, and consumes it.
func (r *PageReader) Raw() ([]byte, error) {
	if !r.pending {
		return nil, errNoRow
	}
	start := r.s.i
	if err := r.s.skip(0); err != nil {
		r.stop(pageError(err))
		return nil, r.err
	}
	r.pending = false
	return r.s.b[start:r.s.i], nil
}

// Decode decodes the current row into v, a *T of c's type, as
// c.Unmarshal would, and consumes the row. The string fields of the rows
// a reader decodes share allocations of 4 KiB (a string over 512 bytes
// has one of its own), so a page of rows costs an allocation per 4 KiB
// of strings, not one a row; a string kept alive keeps at most 4 KiB of
// other rows' strings alive, and is never written again. After an error
// the reader stops: Next returns false.
func (r *PageReader) Decode(c *Codec, v any) error {
	if !r.pending {
		return errNoRow
	}
	rv, err := c.target(v, "Decode")
	if err != nil {
		return err
	}
	if c.p.hookU {
		raw, err := r.Raw()
		if err != nil {
			return err
		}
		if err := c.unmarshalHook(raw, rv); err != nil {
			r.stop(nil)
			return err
		}
		return nil
	}
	d := &r.dec
	d.c, d.s = c, r.s
	err = d.object(rv)
	r.s.i = d.s.i
	d.s = scanner{}
	r.pending = false
	if err != nil {
		r.stop(nil)
		return err
	}
	return nil
}

// Err is the error that stopped Next, nil at the end of a well-formed
// page. A Decode error is Decode's to report, not Err's.
func (r *PageReader) Err() error { return r.err }

var errNoRow = &Error{Rule: "no current row: call Next first", Err: ErrInvalidEntity}
