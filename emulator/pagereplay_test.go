package emulator_test

import (
	"regexp"
	"strconv"
)

// pageEndDiff is a Get Page Ranges End that differs from the recorded
// one.
var pageEndDiff = regexp.MustCompile(`^body PageList/PageRange/End: recorded "(\d+)", got "(\d+)"$`)

// pageEndCut matches a page range ending before the page's end where
// Azure's ends at it (replay_test.go's azuriteDiffers).
func pageEndCut(d string) bool {
	m := pageEndDiff.FindStringSubmatch(d)
	if m == nil {
		return false
	}
	rec, err1 := strconv.ParseInt(m[1], 10, 64)
	got, err2 := strconv.ParseInt(m[2], 10, 64)
	return err1 == nil && err2 == nil && (rec+1)%512 == 0 && got < rec && got > rec-512
}
