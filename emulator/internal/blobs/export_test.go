package blobs

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// State renders everything the service keeps, in a fixed order, as the
// records a location stores plus a digest of each content: two services
// holding the same state render the same text. TestOnDisk compares a
// service's State before Close with the State Open loads back.
func (s *Service) State() string {
	var b strings.Builder
	s.mu.RLock()
	defer s.mu.RUnlock()
	props, _ := json.Marshal(s.props)
	fmt.Fprintf(&b, "properties %s\n", props)
	for _, name := range s.names {
		c := s.containers[name]
		c.mu.RLock()
		rec, _ := json.Marshal(c.record())
		fmt.Fprintf(&b, "container %s %s\n", name, rec)
		for _, bn := range c.names {
			bl := c.blobs[bn]
			r := bl.record()
			r.File = "" // where a content is kept may differ; what it holds may not
			rec, _ := json.Marshal(r)
			fmt.Fprintf(&b, "  blob %q %s content %x\n", bn, rec, contentSum(bl))
			for _, sn := range bl.snapshots {
				r := sn.b.record()
				r.File = ""
				rec, _ := json.Marshal(r)
				fmt.Fprintf(&b, "    snapshot %s %s content %x\n", sn.at, rec, contentSum(sn.b))
			}
		}
		staged := make([]string, 0, len(c.staged))
		for bn := range c.staged {
			staged = append(staged, bn)
		}
		slices.Sort(staged)
		for _, bn := range staged {
			st := c.staged[bn]
			fmt.Fprintf(&b, "  staged %q %s %s", bn, st.etag, st.modified.UTC().Format("2006-01-02T15:04:05.0000000Z"))
			for _, id := range st.order {
				fmt.Fprintf(&b, " %x:%x", id, sha256.Sum256(st.blocks[id]))
			}
			b.WriteString("\n")
		}
		c.mu.RUnlock()
	}
	return b.String()
}

// SetInlineMax sets the largest content kept in the database instead of a
// file of its own, and returns the setting before.
func SetInlineMax(n int) int {
	old := inlineMax
	inlineMax = n
	return old
}
