package main

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeQuickStart: the README's quick start is this program, without
// its imports and main: the code block under "## Quick start" is the text
// of main.go from the Employee type on, with main left out.
func TestReadmeQuickStart(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Quick start\n")
	_, block, ok2 := strings.Cut(section, "```go\n")
	block, _, ok3 := strings.Cut(block, "```\n")
	if !ok || !ok2 || !ok3 {
		t.Fatal("README.md has no Go block under \"## Quick start\"")
	}
	text := string(src)
	start := strings.Index(text, "// Employee is stored")
	mainAt := strings.Index(text, "func main()")
	runAt := strings.Index(text, "func run(")
	if start < 0 || mainAt < start || runAt < mainAt {
		t.Fatal("main.go: want the Employee type, then main, then run")
	}
	if want := text[start:mainAt] + text[runAt:]; block != want {
		t.Errorf("README.md's quick start differs from main.go; the README should show:\n%s", want)
	}
}
