//go:build race

package testenv

// Race reports whether this binary was built with the race detector.
const Race = true
