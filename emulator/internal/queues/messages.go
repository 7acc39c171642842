package queues

import (
	"encoding/xml"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/tablekit/tablekit/azrules"
	"github.com/tablekit/tablekit/emulator/answer"
	"github.com/tablekit/tablekit/emulator/internal/disk"
)

// Azure's limits on messages (the published ones are azrules').
const (
	// maxMessage is the largest message text, in bytes of UTF-8.
	maxMessage = azrules.MaxMessageBytes
	// maxTimeout is the longest visibility timeout, 7 days in seconds.
	maxTimeout = 7 * 24 * 3600
	// defaultTTL is a message's time to live when messagettl is not given.
	defaultTTL = 7 * 24 * 3600
	// maxBatch is the most messages one Get or Peek Messages returns.
	maxBatch = azrules.MaxMessagesPerGet
	// defaultGetTimeout is Get Messages' visibility timeout when none is
	// given.
	defaultGetTimeout = 30
)

// serveMessages answers the operations on a queue's messages: Put
// Message, Get Messages, Peek Messages, Clear Messages.
func (s *Service) serveMessages(w http.ResponseWriter, r *http.Request, q url.Values, name string) *answer.Error {
	switch r.Method {
	case http.MethodPost:
		if e := s.authorize(r, 'o', 'a', name); e != nil {
			return e
		}
		return s.putMessage(w, r, q, name)
	case http.MethodGet:
		if q.Get("peekonly") == "true" {
			if e := s.authorize(r, 'o', 'r', name); e != nil {
				return e
			}
			return s.peekMessages(w, r, q, name)
		}
		if e := s.authorize(r, 'o', 'p', name); e != nil {
			return e
		}
		return s.getMessages(w, r, q, name)
	case http.MethodDelete:
		if e := s.authorize(r, 'o', 'd', name); e != nil {
			return e
		}
		q, e := s.locked(name)
		if e != nil {
			return e
		}
		q.clear()
		p := s.saveMessages(q, true, nil)
		q.mu.Unlock()
		if e := wait(p); e != nil {
			return e
		}
		s.noContent(w, r, http.StatusNoContent)
		return nil
	}
	return answer.UnsupportedHTTPVerb()
}

// serveMessage answers the operations on one message: Update Message and
// Delete Message.
func (s *Service) serveMessage(w http.ResponseWriter, r *http.Request, q url.Values, name, id string) *answer.Error {
	switch r.Method {
	case http.MethodPut:
		if e := s.authorize(r, 'o', 'u', name); e != nil {
			return e
		}
		return s.updateMessage(w, r, q, name, id)
	case http.MethodDelete:
		if e := s.authorize(r, 'o', 'p', name); e != nil {
			return e
		}
		return s.deleteMessage(w, r, q, name, id)
	}
	return answer.UnsupportedHTTPVerb()
}

// intParam reads the integer query parameter key: def when it is absent,
// else its value, or InvalidQueryParameterValue when it is not an integer
// and OutOfRangeQueryParameterValue when it is outside [lo, hi], each
// naming the parameter, its value (and the range) as Azure does.
func intParam(q url.Values, key string, lo, hi, def int64) (int64, *answer.Error) {
	vs, ok := q[key]
	if !ok {
		return def, nil
	}
	v, err := strconv.ParseInt(vs[0], 10, 64)
	if err != nil {
		return 0, answer.InvalidQueryParameter(key, vs[0], "")
	}
	if v < lo || v > hi {
		return 0, answer.OutOfRangeQueryParameter(key, vs[0], lo, hi)
	}
	return v, nil
}

// queueMessage is the body of Put Message and Update Message.
type queueMessage struct {
	XMLName xml.Name `xml:"QueueMessage"`
	Text    *string  `xml:"MessageText"`
}

// readMessage reads a message body: its text, or nil when the body is
// empty (Update Message without content), or Azure's answer to a body that
// is not a QueueMessage document or holds a text over 64 KiB.
func readMessage(r *http.Request) (*string, *answer.Error) {
	body, e := readBody(r)
	if e != nil {
		return nil, e
	}
	if len(body) == 0 {
		return nil, nil
	}
	if len(body) > azrules.MaxMessageBodyBytes {
		return nil, answer.RequestBodyTooLarge().WithDetails(answer.Detail{Name: "MaxLimit", Value: strconv.Itoa(azrules.MaxMessageBodyBytes)})
	}
	var m queueMessage
	if err := xml.Unmarshal(body, &m); err != nil {
		return nil, answer.InvalidXMLDocument()
	}
	if m.Text == nil {
		return nil, answer.InvalidXMLDocument()
	}
	if len(*m.Text) > maxMessage {
		return nil, answer.RequestBodyTooLarge().WithDetails(answer.Detail{Name: "MaxLimit", Value: strconv.Itoa(maxMessage)})
	}
	return m.Text, nil
}

// messageXML is one message in a QueueMessagesList; which fields are
// written depends on the operation (Put: no count or text; Peek: no
// receipt or next-visible time).
type messageXML struct {
	ID              string  `xml:"MessageId"`
	InsertionTime   string  `xml:"InsertionTime"`
	ExpirationTime  string  `xml:"ExpirationTime"`
	PopReceipt      *string `xml:"PopReceipt"`
	TimeNextVisible *string `xml:"TimeNextVisible"`
	DequeueCount    *int64  `xml:"DequeueCount"`
	Text            *string `xml:"MessageText"`
}

type messagesList struct {
	XMLName  xml.Name     `xml:"QueueMessagesList"`
	Messages []messageXML `xml:"QueueMessage"`
}

// rfc1123 is a time as the Queue service writes it.
func rfc1123(t time.Time) string { return t.UTC().Format(http.TimeFormat) }

// The reasons Azure gives in an InvalidQueryParameterValue: a visibility
// timeout not shorter than the time to live and a malformed pop receipt
// as real answers recorded by the Azure SDK for JavaScript's tests word
// them (2019, version 2018-03-28; Azurite adds a period to the first); a
// time to live below 1 and not -1 in Azurite's words, no answer of
// Azure's being at hand.
const (
	reasonTTL        = "Value must be greater than or equal to 1, or -1 to indicate an infinite TTL."
	reasonTimeoutTTL = "messagettl must be greater than visibilitytimeout"
	reasonPopReceipt = "Invalid pop receipt format"
)

// putMessage answers Put Message: visibilitytimeout 0 to 7 days (default
// 0), messagettl any positive number of seconds or -1 for never (default
// 7 days), the visibility timeout shorter than the time to live.
func (s *Service) putMessage(w http.ResponseWriter, r *http.Request, qv url.Values, name string) *answer.Error {
	vt, e := intParam(qv, "visibilitytimeout", 0, maxTimeout, 0)
	if e != nil {
		return e
	}
	ttl := int64(defaultTTL)
	if v, ok := qv["messagettl"]; ok {
		n, err := strconv.ParseInt(v[0], 10, 64)
		if err != nil {
			return answer.InvalidQueryParameter("messagettl", v[0], "")
		}
		if n == 0 || n < -1 {
			return answer.InvalidQueryParameter("messagettl", v[0], reasonTTL)
		}
		ttl = n
	}
	if ttl != -1 && vt >= ttl {
		return answer.InvalidQueryParameter("visibilitytimeout", strconv.FormatInt(vt, 10), reasonTimeoutTTL)
	}
	text, e := readMessage(r)
	if e != nil {
		return e
	}
	if text == nil {
		return answer.InvalidXMLDocument()
	}
	now := s.now()
	m := &message{
		id:          answer.RequestID(),
		text:        *text,
		inserted:    now,
		expires:     neverExpires,
		nextVisible: now.Add(time.Duration(vt) * time.Second),
		receipt:     s.receipt(now, false),
	}
	if ttl != -1 && ttl < int64(neverExpires.Sub(now)/time.Second) {
		m.expires = now.Add(time.Duration(ttl) * time.Second)
	}
	q, e := s.locked(name)
	if e != nil {
		return e
	}
	// The answer is the message as put: once the lock is released a
	// receiver may take it and change its receipt and visibility.
	receipt, next := m.receipt, rfc1123(m.nextVisible)
	answer := messageXML{ID: m.id, InsertionTime: rfc1123(m.inserted), ExpirationTime: rfc1123(m.expires),
		PopReceipt: &receipt, TimeNextVisible: &next}
	q.purge(now)
	q.put(m)
	p := s.saveMessages(q, false, nil, m)
	q.mu.Unlock()
	if e := wait(p); e != nil {
		return e
	}
	s.writeXML(w, r, http.StatusCreated, &messagesList{Messages: []messageXML{answer}})
	return nil
}

// getMessages answers Get Messages: up to numofmessages (1 to 32, default
// 1) visible messages, each hidden for visibilitytimeout seconds (1 to 7
// days, default 30) under one new pop receipt, its dequeue count raised.
func (s *Service) getMessages(w http.ResponseWriter, r *http.Request, qv url.Values, name string) *answer.Error {
	n, e := intParam(qv, "numofmessages", 1, maxBatch, 1)
	if e != nil {
		return e
	}
	vt, e := intParam(qv, "visibilitytimeout", 1, maxTimeout, defaultGetTimeout)
	if e != nil {
		return e
	}
	q, e := s.locked(name)
	if e != nil {
		return e
	}
	now := s.now()
	receipt := s.receipt(now, false)
	next := now.Add(time.Duration(vt) * time.Second)
	list := messagesList{Messages: []messageXML{}}
	taken := q.take(now, int(n))
	for _, m := range taken {
		m.nextVisible, m.receipt = next, receipt
		m.dequeues++
		q.fix(m)
		list.Messages = append(list.Messages, s.describe(m, true))
	}
	var p *disk.Pending
	if len(taken) > 0 || len(q.expired) > 0 {
		p = s.saveMessages(q, false, nil, taken...)
	}
	q.mu.Unlock()
	if e := wait(p); e != nil {
		return e
	}
	s.writeXML(w, r, http.StatusOK, &list)
	return nil
}

// describe is m as Get Messages (withReceipt) or Peek Messages write it.
func (s *Service) describe(m *message, withReceipt bool) messageXML {
	count, text := m.dequeues, m.text
	x := messageXML{ID: m.id, InsertionTime: rfc1123(m.inserted), ExpirationTime: rfc1123(m.expires), DequeueCount: &count, Text: &text}
	if withReceipt {
		receipt, next := m.receipt, rfc1123(m.nextVisible)
		x.PopReceipt, x.TimeNextVisible = &receipt, &next
	}
	return x
}

// peekMessages answers Peek Messages: up to numofmessages (1 to 32,
// default 1) visible messages, left as they are.
func (s *Service) peekMessages(w http.ResponseWriter, r *http.Request, qv url.Values, name string) *answer.Error {
	n, e := intParam(qv, "numofmessages", 1, maxBatch, 1)
	if e != nil {
		return e
	}
	q, e := s.locked(name)
	if e != nil {
		return e
	}
	list := messagesList{Messages: []messageXML{}}
	for _, m := range q.take(s.now(), int(n)) {
		list.Messages = append(list.Messages, s.describe(m, false))
	}
	q.mu.Unlock()
	s.writeXML(w, r, http.StatusOK, &list)
	return nil
}

// popReceipt reads the popreceipt parameter Update and Delete Message
// require.
func popReceipt(qv url.Values) (string, *answer.Error) {
	v, ok := qv["popreceipt"]
	if !ok {
		return "", answer.MissingQueryParameter("popreceipt")
	}
	if !wellFormedReceipt(v[0]) {
		return "", answer.InvalidQueryParameter("popreceipt", v[0], reasonPopReceipt)
	}
	return v[0], nil
}

// find returns the message id of q if receipt is its current pop receipt.
// A message that is gone (deleted, expired) and one whose receipt is stale
// (handed out again, or updated, since) get the same answer from Azure:
// 404 MessageNotFound. Azure lists PopReceiptMismatch (400) among its
// codes, and Azurite answers it for a stale receipt, but Azure's own
// answers to stale receipts are 404 MessageNotFound. q is locked.
func (q *queue) find(now time.Time, id, receipt string) (*message, *answer.Error) {
	q.purge(now)
	m := q.byID[id]
	if m == nil || m.receipt != receipt {
		return nil, errMessageNotFound
	}
	return m, nil
}

// updateMessage answers Update Message: a new visibility timeout (0 to 7
// days, required) and, when the body has
// one, a new text; the answer carries the new pop receipt and next-visible
// time in headers.
func (s *Service) updateMessage(w http.ResponseWriter, r *http.Request, qv url.Values, name, id string) *answer.Error {
	receipt, e := popReceipt(qv)
	if e != nil {
		return e
	}
	if !qv.Has("visibilitytimeout") {
		return answer.MissingQueryParameter("visibilitytimeout")
	}
	vt, e := intParam(qv, "visibilitytimeout", 0, maxTimeout, 0)
	if e != nil {
		return e
	}
	text, e := readMessage(r)
	if e != nil {
		return e
	}
	q, e := s.locked(name)
	if e != nil {
		return e
	}
	now := s.now()
	m, e := q.find(now, id, receipt)
	if e != nil {
		q.mu.Unlock()
		return e
	}
	// The REST reference says the timeout may not end after the message
	// expires, but Azure does not enforce it; neither does the emulator.
	next := now.Add(time.Duration(vt) * time.Second)
	m.nextVisible, m.receipt = next, s.receipt(now, true)
	if text != nil {
		m.text = *text
	}
	q.fix(m)
	newReceipt := m.receipt
	p := s.saveMessages(q, false, nil, m)
	q.mu.Unlock()
	if e := wait(p); e != nil {
		return e
	}
	h := s.begin(w, r)
	h.Set("x-ms-popreceipt", newReceipt)
	h.Set("x-ms-time-next-visible", rfc1123(next))
	h.Set("Content-Length", "0")
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// deleteMessage answers Delete Message.
func (s *Service) deleteMessage(w http.ResponseWriter, r *http.Request, qv url.Values, name, id string) *answer.Error {
	receipt, e := popReceipt(qv)
	if e != nil {
		return e
	}
	q, e := s.locked(name)
	if e != nil {
		return e
	}
	m, e := q.find(s.now(), id, receipt)
	var p *disk.Pending
	if e == nil {
		q.remove(m)
		p = s.saveMessages(q, false, []string{id})
	}
	q.mu.Unlock()
	if e != nil {
		return e
	}
	if e := wait(p); e != nil {
		return e
	}
	s.noContent(w, r, http.StatusNoContent)
	return nil
}
