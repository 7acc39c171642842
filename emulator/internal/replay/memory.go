package replay

import "strings"

// memory holds the values the service chose, recorded -> answered: the
// recorded session's later requests carry the recorded values (an ETag in
// If-Match, a continuation token, a message id and pop receipt), and the
// replay sends the answered ones instead.
type memory struct {
	answered map[string]string
}

func newMemory() *memory { return &memory{answered: map[string]string{}} }

// remember notes that where Azure answered recorded, the target answered
// got. Empty and equal values teach nothing.
func (m *memory) remember(recorded, got string) {
	if recorded == "" || got == "" || recorded == got {
		return
	}
	m.answered[recorded] = got
}

// value is v, or what the target answered where Azure answered v.
func (m *memory) value(v string) string {
	if got, ok := m.answered[v]; ok {
		return got
	}
	return v
}

// path substitutes remembered values in an escaped path's segments (a
// queue message's id).
func (m *memory) path(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = m.value(s)
	}
	return strings.Join(segs, "/")
}

// text substitutes every remembered value in a batch body (the If-Match
// lines of its operations).
func (m *memory) text(s string) string {
	for rec, got := range m.answered {
		s = strings.ReplaceAll(s, rec, got)
	}
	return s
}
