// Package answer is Azure Storage's side of the rules tablekit lives by:
// the answers the services give (status, error code, message, the body
// and headers they come in) and the checks that decide them. The Azurite
// harness's strict proxy and tablekit's emulator both answer through it,
// and its checks call the same definitions as the client's (entity, keys),
// so a rule is written once.
package answer

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Error is one answer of the service that is not a success: the HTTP
// status, the error code (the body's code, and for the Blob and Queue
// services x-ms-error-code) and the
// message's first line (the service appends RequestId and Time).
// Details are the further elements the Blob and Queue services put in
// the XML body after Message (QueryParameterName, HeaderName, Reason,
// ...); the Table service's JSON has no place for them.
type Error struct {
	Status  int
	Code    string
	Message string
	Details []Detail
}

// Detail is one element of an XML error body after Message: Name is the
// element's name, Value its text.
type Detail struct {
	Name, Value string
}

// WithDetails returns a copy of e carrying details after e's own: the
// answers are shared values, so they are never changed in place.
func (e *Error) WithDetails(details ...Detail) *Error {
	c := *e
	c.Details = append(append([]Detail(nil), e.Details...), details...)
	return &c
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// New returns an Error.
func New(status int, code, message string) *Error {
	return &Error{Status: status, Code: code, Message: message}
}

// TimeLayout is the services' time text in bodies: UTC, 7 fractional
// digits.
const TimeLayout = "2006-01-02T15:04:05.0000000Z"

// RequestID returns a new request id in the form the services use (a
// GUID).
func RequestID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// SetHeaders sets the headers every answer of a storage service carries:
// Date, x-ms-request-id (id), and x-ms-version and x-ms-client-request-id
// echoed from the request.
func SetHeaders(h http.Header, r *http.Request, id string) {
	h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	h.Set("x-ms-request-id", id)
	if v := r.Header.Get("x-ms-version"); v != "" {
		h.Set("x-ms-version", v)
	}
	if v := r.Header.Get("x-ms-client-request-id"); v != "" {
		h.Set("x-ms-client-request-id", v)
	}
}

// SetTableHeaders sets SetHeaders' headers and Cache-Control, which every
// answer of the Table service adds. Its answers carry no
// DataServiceVersion (only a transaction's operations do): Azure's
// recorded answers, successes and errors, have none.
func SetTableHeaders(h http.Header, r *http.Request, id string) {
	h.Set("Cache-Control", "no-cache")
	SetHeaders(h, r, id)
}

// MessageText is the message as the service writes it in a body: the
// first line, then RequestId and Time.
func MessageText(message, id string) string {
	return message + "\nRequestId:" + id + "\nTime:" + time.Now().UTC().Format(TimeLayout)
}

// ODataBody is the Table service's JSON error body.
func ODataBody(code, message, id string) []byte {
	var e struct {
		OData struct {
			Code    string `json:"code"`
			Message struct {
				Lang  string `json:"lang"`
				Value string `json:"value"`
			} `json:"message"`
		} `json:"odata.error"`
	}
	e.OData.Code = code
	e.OData.Message.Lang = "en-US"
	e.OData.Message.Value = MessageText(message, id)
	b, _ := json.Marshal(e)
	return b
}

// WriteTable answers r with e as the Table service does: JSON
// (odata.error) with the Table service's headers. Azure's Table service
// puts the code in the body only, with no x-ms-error-code header (real
// sessions recorded in 2021 and 2024, internal/replay's testdata); azcore
// reads it from the body. e's Details are left out: the Table service's
// JSON error has no place for them.
func WriteTable(w http.ResponseWriter, r *http.Request, e *Error) {
	WriteTableAs(w, r, e, "application/json;odata=minimalmetadata;streaming=true;charset=utf-8")
}

// The Table service's JSON formats (odata=...), as a request asks for one.
const (
	MinimalMetadata = "minimalmetadata"
	NoMetadata      = "nometadata"
	FullMetadata    = "fullmetadata"
)

// TableFormat is the JSON format a Table service request asks for: its
// $format, else its Accept header; minimal metadata when it names none.
// atom is true when it asks for Atom (XML) only, which the service
// refuses (415 AtomFormatNotSupported).
func TableFormat(query url.Values, header http.Header) (odata string, atom bool) {
	a := query.Get("$format")
	if a == "" {
		a = header.Get("Accept")
	}
	a = strings.ToLower(strings.ReplaceAll(a, " ", ""))
	switch {
	case strings.Contains(a, "odata=nometadata"):
		return NoMetadata, false
	case strings.Contains(a, "odata=fullmetadata"):
		return FullMetadata, false
	case a == "" || strings.Contains(a, "json") || strings.Contains(a, "*/*"):
		return MinimalMetadata, false
	case strings.Contains(a, "atom") || strings.Contains(a, "xml"):
		return MinimalMetadata, true
	}
	return MinimalMetadata, false
}

// TableContentType is the Content-Type of an answer in the JSON format
// odata (TableFormat).
func TableContentType(odata string) string {
	return "application/json;odata=" + odata + ";streaming=true;charset=utf-8"
}

// WriteTableAs is WriteTable with the answer's Content-Type: the format
// the request asked for, as the Table service answers an error to a
// request it has read (the Python SDK's recordings of 2017, every
// header: a 404 to Accept: application/json;odata=nometadata is
// application/json;odata=nometadata;streaming=true;charset=utf-8).
func WriteTableAs(w http.ResponseWriter, r *http.Request, e *Error, contentType string) {
	id := RequestID()
	h := w.Header()
	SetTableHeaders(h, r, id)
	h.Set("Content-Type", contentType)
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(e.Status)
	if r.Method != http.MethodHead {
		w.Write(ODataBody(e.Code, e.Message, id))
	}
}

// XMLBody is the Blob and Queue services' XML error body: Code, Message,
// then one element per detail, in order. The message's line breaks are
// written as they are, as Azure writes them (encoding/xml would write
// &#xA;, which some SDKs' parsers do not decode).
func XMLBody(code, message, id string, details ...Detail) []byte {
	b := []byte(`<?xml version="1.0" encoding="utf-8"?><Error><Code>`)
	b = appendXMLText(b, code)
	b = append(b, "</Code><Message>"...)
	b = appendXMLText(b, MessageText(message, id))
	b = append(b, "</Message>"...)
	for _, d := range details {
		b = append(b, '<')
		b = append(b, d.Name...)
		b = append(b, '>')
		b = appendXMLText(b, d.Value)
		b = append(b, "</"...)
		b = append(b, d.Name...)
		b = append(b, '>')
	}
	return append(b, "</Error>"...)
}

// appendXMLText appends s escaped as XML character data: &, < and > as
// entities, everything else (line breaks included) as it is.
func appendXMLText(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '&':
			b = append(b, "&amp;"...)
		case '<':
			b = append(b, "&lt;"...)
		case '>':
			b = append(b, "&gt;"...)
		default:
			b = append(b, c)
		}
	}
	return b
}

// WriteXML answers r with e as the Blob and Queue services do: an XML
// body with e's details (none for HEAD) and x-ms-error-code.
func WriteXML(w http.ResponseWriter, r *http.Request, e *Error) {
	writeXML(w, r, e, true)
}

// writeXML is WriteXML, with the x-ms-error-code header only if code.
func writeXML(w http.ResponseWriter, r *http.Request, e *Error, code bool) {
	id := RequestID()
	h := w.Header()
	SetHeaders(h, r, id)
	if code {
		h.Set("x-ms-error-code", e.Code)
	}
	if r.Method == http.MethodHead {
		w.WriteHeader(e.Status)
		return
	}
	h.Set("Content-Type", "application/xml")
	w.WriteHeader(e.Status)
	w.Write(XMLBody(e.Code, e.Message, id, e.Details...))
}

// WriteUnknownVersion answers a request whose x-ms-version the service
// does not know (v, its value) as Azure does: 400 InvalidHeaderValue
// naming x-ms-version and v, with neither x-ms-version nor
// x-ms-error-code among the headers. Evidence: a real Blob service's
// answer to Azure.Storage.Blobs 12.21.0 sending 2024-08-04, quoted with
// its headers (Server, x-ms-request-id, Date, Content-Length,
// Content-Type: application/xml) in Azure/azure-sdk-for-net 45302; the
// .NET SDK lists x-ms-version and x-ms-error-code when a service sends
// them (microsoft/onefuzz 3381 quotes both on a Queue error), so their
// absence there is the service's (medium: an SDK's log of a real
// answer). The Table service (table) answers in its JSON, which has no
// place for the header's name and value; no answer of its own is
// recorded (weak).
func WriteUnknownVersion(w http.ResponseWriter, r *http.Request, v string, table bool) {
	e := InvalidHeader("x-ms-version", v)
	// The answer echoes no version: SetHeaders echoes the request's.
	r2 := *r
	r2.Header = r.Header.Clone()
	r2.Header.Del("X-Ms-Version")
	if table {
		WriteTable(w, &r2, e)
		return
	}
	writeXML(w, &r2, e, false)
}

// WriteBatchError answers a transaction the service refuses as Azure
// does: 202 Accepted, and a multipart body holding one change-set
// response with the failing operation's status line, its headers in
// Azure's order (Content-ID and Preference-Applied when e has them) and an OData error
// whose message starts with "N:", N the operation's 0-based index
// (BatchError.Message: not in a one-operation change set).
func WriteBatchError(w http.ResponseWriter, r *http.Request, e *BatchError) {
	id := RequestID()
	batch, changeset := "batchresponse_"+RequestID(), "changesetresponse_"+RequestID()
	var b bytes.Buffer
	b.WriteString("--" + batch + "\r\nContent-Type: multipart/mixed; boundary=" + changeset + "\r\n\r\n")
	b.WriteString("--" + changeset + "\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n")
	b.WriteString("HTTP/1.1 " + strconv.Itoa(e.Err.Status) + " " + http.StatusText(e.Err.Status) + "\r\n")
	if e.ContentID != "" {
		b.WriteString("Content-ID: " + e.ContentID + "\r\n")
	}
	b.WriteString("X-Content-Type-Options: nosniff\r\nCache-Control: no-cache\r\n")
	if e.Preference != "" {
		b.WriteString("Preference-Applied: " + e.Preference + "\r\n")
	}
	b.WriteString("DataServiceVersion: 3.0;\r\n")
	b.WriteString("Content-Type: application/json;odata=minimalmetadata;streaming=true;charset=utf-8\r\n\r\n")
	b.Write(ODataBody(e.Err.Code, e.Message(), id))
	b.WriteString("\r\n--" + changeset + "--\r\n")
	AppendRefusedChangeSets(&b, batch, e.ExtraChangeSets)
	b.WriteString("--" + batch + "--\r\n")
	h := w.Header()
	SetTableHeaders(h, r, id)
	h.Set("Content-Type", "multipart/mixed; boundary="+batch)
	h.Set("Content-Length", strconv.Itoa(b.Len()))
	w.WriteHeader(http.StatusAccepted)
	w.Write(b.Bytes())
}

// AppendRefusedChangeSets appends to a batch response (boundary batch)
// the answers to n change sets after the first: the service processes
// the first change set only and refuses each further one with 400 Bad
// Request ("Performing entity group transactions", docs, which give the
// status alone: the code and message here, InvalidInput, are the
// service's answer to a batch it cannot take, not a recorded one).
func AppendRefusedChangeSets(b *bytes.Buffer, batch string, n int) {
	for range n {
		id, changeset := RequestID(), "changesetresponse_"+RequestID()
		b.WriteString("--" + batch + "\r\nContent-Type: multipart/mixed; boundary=" + changeset + "\r\n\r\n")
		b.WriteString("--" + changeset + "\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n")
		b.WriteString("HTTP/1.1 400 Bad Request\r\nX-Content-Type-Options: nosniff\r\nCache-Control: no-cache\r\nDataServiceVersion: 3.0;\r\n")
		b.WriteString("Content-Type: application/json;odata=minimalmetadata;streaming=true;charset=utf-8\r\n\r\n")
		b.Write(ODataBody(CodeInvalidInput, MsgInvalidInput, id))
		b.WriteString("\r\n--" + changeset + "--\r\n")
	}
}
