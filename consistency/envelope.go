package consistency

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/tablekit/tablekit/azrules"
	"github.com/tablekit/tablekit/keys"
)

// Version is the envelope version this package writes and reads.
const Version = 1

// MaxMessageBytes is the largest queue message the service accepts (64
// KiB, azrules.MaxMessageBytes). Transactions whose envelope is larger
// travel through a blob.
const MaxMessageBytes = azrules.MaxMessageBytes

// maxIDLen bounds a transaction id (it becomes part of a blob name).
const maxIDLen = 128

// Step is one idempotent unit of work: a kind, naming the handler that
// applies it, and the handler's arguments as JSON.
//
// The constructors of the built-in steps (UpsertEntity, MoveEntity, ...)
// and NewStep never fail; an argument that cannot be encoded is reported
// when the transaction is encoded or enqueued, naming the step.
type Step struct {
	Kind string          `json:"kind"`
	Args json.RawMessage `json:"args,omitempty"`
	err  error
}

// NewStep returns a step of the given kind whose arguments are args
// encoded with encoding/json (args may also be a json.RawMessage).
func NewStep(kind string, args any) Step {
	s := Step{Kind: kind}
	if args == nil {
		return s
	}
	b, err := json.Marshal(args)
	if err != nil {
		s.err = err
		return s
	}
	s.Args = b
	return s
}

// Err reports why the step cannot be encoded, or nil.
func (s Step) Err() error { return s.err }

// Transaction is an ordered list of idempotent steps carried by one queue
// message. The worker applies the steps in order and deletes the message
// only when every step has succeeded; a step may therefore run more than
// once, and every step must be idempotent.
type Transaction struct {
	// ID identifies the transaction in logs, metrics and the poison
	// queue: 1 to 128 ASCII letters, digits, '-', '_' or '.'. NewTransaction
	// sets a random one; Enqueue sets one when empty.
	ID    string
	Steps []Step
}

// NewTransaction returns a transaction with a random ID.
func NewTransaction(steps ...Step) *Transaction {
	return &Transaction{ID: NewID(), Steps: steps}
}

// Add appends steps and returns tx.
func (tx *Transaction) Add(steps ...Step) *Transaction {
	tx.Steps = append(tx.Steps, steps...)
	return tx
}

// NewID returns a random transaction id (32 hex digits).
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// envelope is the wire form of a queue message: a transaction inline, or a
// reference to the blob that holds it. TraceParent and TraceState are the
// W3C trace context of the span that enqueued it; they are written only by
// a Queue with a TracePropagator, so that workers older than these fields
// (which reject unknown fields) keep reading what other writers send.
type envelope struct {
	V           int      `json:"v"`
	ID          string   `json:"id"`
	Steps       []Step   `json:"steps,omitempty"`
	Blob        *BlobRef `json:"blob,omitempty"`
	TraceParent string   `json:"traceparent,omitempty"`
	TraceState  string   `json:"tracestate,omitempty"`
}

// BlobRef names a blob.
type BlobRef struct {
	Container string `json:"container"`
	Name      string `json:"name"`
}

// MarshalJSON encodes the transaction as its versioned envelope:
// {"v":1,"id":"...","steps":[{"kind":"...","args":{...}}]}.
func (tx *Transaction) MarshalJSON() ([]byte, error) {
	if err := tx.Validate(); err != nil {
		return nil, err
	}
	return json.Marshal(envelope{V: Version, ID: tx.ID, Steps: tx.Steps})
}

// UnmarshalJSON decodes an envelope written by MarshalJSON. It accepts
// only inline transactions (not blob references) and validates them.
func (tx *Transaction) UnmarshalJSON(data []byte) error {
	env, err := decodeEnvelope(data)
	if err != nil {
		return err
	}
	if env.Blob != nil {
		return malformed("the envelope references a blob; fetch it first", nil)
	}
	t := Transaction{ID: env.ID, Steps: env.Steps}
	if err := t.Validate(); err != nil {
		return err
	}
	*tx = t
	return nil
}

// ParseTransaction decodes an envelope. When allowNoID is true, a missing
// id is replaced by a random one (for files written by hand).
func ParseTransaction(data []byte, allowNoID bool) (*Transaction, error) {
	env, err := decodeEnvelope(data)
	if err != nil {
		return nil, err
	}
	if env.Blob != nil {
		return nil, malformed("the envelope references a blob; fetch it first", nil)
	}
	tx := &Transaction{ID: env.ID, Steps: env.Steps}
	if tx.ID == "" && allowNoID {
		tx.ID = NewID()
	}
	if err := tx.Validate(); err != nil {
		return nil, err
	}
	return tx, nil
}

// Validate checks the envelope rules: a valid id, at least one step, every
// step with a kind, JSON object arguments and no encoding error. Errors
// wrap ErrMalformed (and so ErrPermanent). It does not check the arguments
// of each kind; Queue.Enqueue does that for the built-in kinds.
func (tx *Transaction) Validate() error { return tx.validate(false) }

// validate is Validate; argsDecoded says the steps' arguments were cut
// from an envelope that decoded as JSON, so each is known to be one valid
// JSON value and only its kind is checked, not its syntax a second time.
func (tx *Transaction) validate(argsDecoded bool) error {
	if err := validateID(tx.ID); err != nil {
		return err
	}
	if len(tx.Steps) == 0 {
		return malformed("transaction "+strconv.Quote(tx.ID)+" has no step", nil)
	}
	// The step's place is written only into an error.
	where := func(i int) string { return "transaction " + strconv.Quote(tx.ID) + " step " + strconv.Itoa(i) }
	for i, s := range tx.Steps {
		if s.err != nil {
			return malformed(where(i)+" ("+s.Kind+"): cannot encode the arguments", s.err)
		}
		if s.Kind == "" {
			return malformed(where(i)+" has no kind", nil)
		}
		if len(s.Args) > 0 {
			a := bytes.TrimSpace(s.Args)
			if string(a) != "null" && (len(a) == 0 || a[0] != '{' || !argsDecoded && !json.Valid(a)) {
				return malformed(where(i)+" ("+s.Kind+"): args is not a JSON object", nil)
			}
		}
	}
	return nil
}

func validateID(id string) error {
	if id == "" {
		return malformed("the transaction has no id", nil)
	}
	if len(id) > maxIDLen {
		return malformed("transaction id longer than "+strconv.Itoa(maxIDLen)+" characters", nil)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return malformed("transaction id "+strconv.Quote(id)+" has character "+strconv.QuoteRune(rune(c))+" (allowed: letters, digits, - _ .)", nil)
		}
	}
	return nil
}

// decodeMessage decodes the envelope of a queue message's text: JSON, or
// JSON encoded in base64 (standard alphabet, padded), as Azure Functions'
// queue output bindings and other SDKs write messages by default.
func decodeMessage(text string) (*envelope, error) {
	return decodeEnvelope(messageBody(text))
}

// messageBody returns the JSON of a message's text, decoding base64. A
// JSON envelope starts with '{', which base64 never contains, so the two
// forms cannot be confused.
func messageBody(text string) []byte {
	t := strings.TrimSpace(text)
	if t == "" || t[0] == '{' {
		return []byte(text)
	}
	if b, err := base64.StdEncoding.DecodeString(t); err == nil {
		if bt := bytes.TrimSpace(b); len(bt) > 0 && bt[0] == '{' {
			return b
		}
	}
	return []byte(text)
}

// decodeEnvelope decodes and checks the version; unknown fields are
// rejected so that a newer writer's envelope is not half-understood.
func decodeEnvelope(data []byte) (*envelope, error) {
	var env envelope
	if !decodeKnown(data, &env) {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&env); err != nil {
			return nil, malformed("not a JSON envelope (nor one encoded in base64)", err)
		}
		if dec.More() {
			return nil, malformed("trailing data after the envelope", nil)
		}
	}
	if env.V != Version {
		return nil, malformed("envelope version "+strconv.Itoa(env.V)+", this worker reads version "+strconv.Itoa(Version), nil)
	}
	if env.Blob != nil {
		if err := validateID(env.ID); err != nil {
			return nil, err
		}
		if env.Blob.Container == "" || env.Blob.Name == "" || len(env.Steps) > 0 {
			return nil, malformed("a blob reference needs a container and a name and no steps", nil)
		}
		if err := keys.ValidateContainerName(env.Blob.Container); err != nil {
			return nil, malformed("the blob reference's container", err)
		}
		if err := keys.ValidateBlobName(env.Blob.Name); err != nil {
			return nil, malformed("the blob reference's name", err)
		}
	}
	return &env, nil
}
