package azrules

import "errors"

// The kinds of broken rule. Every error a check function returns wraps
// exactly one of them, so errors.Is tells the kind without reading the
// text.
var (
	// ErrLength is a value too long or too short.
	ErrLength = errors.New("length out of range")
	// ErrCharacter is a character the rule does not allow.
	ErrCharacter = errors.New("character not allowed")
	// ErrForm is any other broken rule: text that is not UTF-8, a
	// reserved name, a bad path segment.
	ErrForm = errors.New("malformed")
)

// ruleError is a broken rule: what is wrong, in words, and its kind.
type ruleError struct {
	msg  string
	kind error
}

func (e *ruleError) Error() string { return e.msg }
func (e *ruleError) Unwrap() error { return e.kind }

func lengthErr(msg string) error    { return &ruleError{msg, ErrLength} }
func characterErr(msg string) error { return &ruleError{msg, ErrCharacter} }
func formErr(msg string) error      { return &ruleError{msg, ErrForm} }
