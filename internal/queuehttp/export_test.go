package queuehttp

// Scanned reports whether the scanner reads body itself, without
// encoding/xml.
func Scanned(body []byte) bool {
	_, ok := scanMessages(body)
	return ok
}
