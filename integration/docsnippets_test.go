package integration_test

import (
	"fmt"
	"go/ast"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The Go blocks of README.md and docs/*.md, and those of the packages'
// doc comments (doc.go) that parse as Go, are built and vetted, so the
// docs show calls that exist. A block is compiled by what it is:
//
//   - a whole file (it starts with "package") as it is;
//   - a block with top-level declarations (func, type, var, const,
//     import) as the body of a file, its imports completed from
//     snippetImports;
//   - else statements, as the body of func(t *testing.T, ctx
//     context.Context).
//
// Before a block, an HTML comment may give what the block assumes, as Go
// declarations at the top level of its file:
//
//	<!-- snippet given: var userID string -->
//
// or say that it is not to be compiled, and why:
//
//	<!-- snippet not compiled: one line of a longer program -->
//
// Variables a block declares and does not use are used for it: a
// snippet shows a call, not what follows it.

// snippetImports maps a package name a block uses to its import path.
var snippetImports = map[string]string{
	"context":     "context",
	"errors":      "errors",
	"fmt":         "fmt",
	"os":          "os",
	"strings":     "strings",
	"testing":     "testing",
	"time":        "time",
	"azcore":      "github.com/Azure/azure-sdk-for-go/sdk/azcore",
	"azblob":      "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob",
	"azqueue":     "github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue",
	"aztables":    "github.com/Azure/azure-sdk-for-go/sdk/data/aztables",
	"tablekit":    "github.com/tablekit/tablekit",
	"consistency": "github.com/tablekit/tablekit/consistency",
	"emulator":    "github.com/tablekit/tablekit/emulator",
	"entity":      "github.com/tablekit/tablekit/entity",
	"keys":        "github.com/tablekit/tablekit/keys",
	"patterns":    "github.com/tablekit/tablekit/patterns",
	"tablecopy":   "github.com/tablekit/tablekit/tablecopy",
	"azurite":     "github.com/tablekit/tablekit/integration/azurite",
}

// docSnippet is one ```go block of a markdown file.
type docSnippet struct {
	file  string // relative to the repository
	line  int    // of the opening fence
	code  string
	given string // from a "snippet given:" comment
	skip  string // from a "snippet not compiled:" comment
}

var (
	fenceRE   = regexp.MustCompile("(?ms)^```go[ \\t]*\\n(.*?)^```[ \\t]*$")
	markRE    = regexp.MustCompile(`<!--\s*snippet (given|not compiled):\s*(.*?)\s*-->\s*$`)
	pkgUsedRE = regexp.MustCompile(`\b([a-z][a-z0-9]*)\.[A-Za-z_]`)
)

// docSnippets returns the ```go blocks of the markdown file at path, with
// the marks of the comments just before each.
func docSnippets(t *testing.T, root, rel string) []docSnippet {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	var out []docSnippet
	for _, m := range fenceRE.FindAllStringSubmatchIndex(text, -1) {
		s := docSnippet{file: rel, line: strings.Count(text[:m[0]], "\n") + 1, code: text[m[2]:m[3]]}
		// The comments on the lines just before the fence.
		before := strings.Split(strings.TrimRight(text[:m[0]], "\n"), "\n")
		for i := len(before) - 1; i >= 0; i-- {
			mm := markRE.FindStringSubmatch(before[i])
			if mm == nil {
				break
			}
			if mm[1] == "given" {
				s.given = mm[2] + "\n" + s.given
			} else {
				s.skip = mm[2]
			}
		}
		out = append(out, s)
	}
	return out
}

// pkgDocGivens is what the Go blocks of a package's doc comment assume,
// by file, beside pkgDocGiven, which they all may.
var pkgDocGivens = map[string]string{
	"entity/doc.go": "type Address struct{ Street, City string }",
}

// pkgDocGiven is what every Go block of a package doc may assume.
const pkgDocGiven = "var acct *tablekit.Account"

// pkgDocSnippets returns the code blocks of the package doc comment in
// the Go file at rel that parse as Go (the others are tables, wire
// formats, or code with elisions such as "{ ... }").
func pkgDocSnippets(t *testing.T, root, rel string) []docSnippet {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.Join(root, rel), nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	if f.Doc == nil {
		return nil
	}
	var out []docSnippet
	var p comment.Parser
	for _, b := range p.Parse(f.Doc.Text()).Content {
		c, ok := b.(*comment.Code)
		if !ok {
			continue
		}
		s := docSnippet{file: rel, line: fset.Position(f.Doc.Pos()).Line, code: c.Text, given: pkgDocGiven + "\n" + pkgDocGivens[filepath.ToSlash(rel)]}
		if _, err := snippetSource(s); err != nil {
			continue
		}
		out = append(out, s)
	}
	return out
}

// snippetSource returns the file a snippet is compiled as.
func snippetSource(s docSnippet) (string, error) {
	code := s.code
	if strings.HasPrefix(strings.TrimSpace(code), "package ") {
		return code, nil
	}
	topLevel := regexp.MustCompile(`(?m)^(func|type|var|const|import)\b`).MatchString(code)
	// The block's own imports, then those its names need.
	imports := map[string]bool{}
	if topLevel {
		var kept []string
		for _, l := range strings.Split(code, "\n") {
			if m := regexp.MustCompile(`^import\s+"([^"]+)"\s*$`).FindStringSubmatch(l); m != nil {
				imports[m[1]] = true
				continue
			}
			kept = append(kept, l)
		}
		code = strings.Join(kept, "\n")
	}
	body := code
	if !topLevel {
		body = "func _(t *testing.T, ctx context.Context) {\n" + code + "\n}\n"
	}
	for _, m := range pkgUsedRE.FindAllStringSubmatch(s.given+"\n"+body, -1) {
		if path, ok := snippetImports[m[1]]; ok {
			imports[path] = true
		}
	}
	paths := make([]string, 0, len(imports))
	for p := range imports {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var head strings.Builder
	head.WriteString("package snippet\n\n")
	for _, p := range paths {
		fmt.Fprintf(&head, "import %q\n", p)
	}
	head.WriteString("\n" + s.given + "\n")
	src := head.String() + body
	return useDeclared(src)
}

// useDeclared adds "_ = v" after each statement of a function body that
// declares v with := (at the body's top level), so a block that shows a
// call without using its results compiles.
func useDeclared(src string) (string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "snippet.go", src, parser.SkipObjectResolution)
	if err != nil {
		return "", err
	}
	type insert struct {
		at   int
		text string
	}
	var ins []insert
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		for _, st := range fn.Body.List {
			as, ok := st.(*ast.AssignStmt)
			if !ok || as.Tok != token.DEFINE {
				continue
			}
			var uses []string
			for _, e := range as.Lhs {
				if id, ok := e.(*ast.Ident); ok && id.Name != "_" {
					uses = append(uses, "_ = "+id.Name)
				}
			}
			if len(uses) > 0 {
				ins = append(ins, insert{fset.Position(as.End()).Offset, "; " + strings.Join(uses, "; ")})
			}
		}
	}
	slices.SortFunc(ins, func(a, b insert) int { return b.at - a.at })
	for _, in := range ins {
		src = src[:in.at] + in.text + src[in.at:]
	}
	return src, nil
}

// repoRoot is the module's root, one directory up from this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatal(err)
	}
	return root
}

// TestDocSnippetsBuild builds and vets every Go block of README.md and
// docs/*.md not marked "snippet not compiled", and every code block of a
// package doc (doc.go) that parses as Go, each as a package of a
// module of its own that requires this repository (a replace to it).
func TestDocSnippetsBuild(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the docs' Go blocks are built with the go command, which is not on PATH: %v", err)
	}
	root := repoRoot(t)
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"README.md"}
	for _, d := range docs {
		rel, _ := filepath.Rel(root, d)
		files = append(files, rel)
	}
	var snippets []docSnippet
	for _, f := range files {
		snippets = append(snippets, docSnippets(t, root, f)...)
	}
	pkgDocs, err := filepath.Glob(filepath.Join(root, "*", "doc.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range append([]string{filepath.Join(root, "doc.go")}, pkgDocs...) {
		rel, _ := filepath.Rel(root, d)
		snippets = append(snippets, pkgDocSnippets(t, root, rel)...)
	}
	if len(snippets) == 0 {
		t.Fatal("no ```go block found in README.md and docs/*.md")
	}

	mod := t.TempDir()
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	// The repository's own requirements, so that every package it uses
	// resolves at the versions its go.sum holds.
	reqs := strings.SplitN(string(gomod), "\nrequire", 2)
	if len(reqs) != 2 {
		t.Fatal("go.mod: no require block")
	}
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(mod, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module docsnippets\n\ngo 1.25.0\n\nrequire github.com/tablekit/tablekit v0.0.0\n\nreplace github.com/tablekit/tablekit => "+root+"\n\nrequire"+reqs[1])
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	write("go.sum", string(sum))

	where := map[string]docSnippet{}
	var pkgs []string
	for i, s := range snippets {
		if s.skip != "" {
			t.Logf("%s:%d: not compiled: %s", s.file, s.line, s.skip)
			continue
		}
		src, err := snippetSource(s)
		if err != nil {
			t.Errorf("%s:%d: the Go block does not parse (%v); fix it, or mark it <!-- snippet not compiled: why -->", s.file, s.line, err)
			continue
		}
		dir := fmt.Sprintf("s%03d", i)
		write(filepath.Join(dir, "snippet.go"), src)
		where[dir] = s
		pkgs = append(pkgs, "./"+dir)
	}
	if len(pkgs) == 0 {
		return
	}
	// One package at a time would compile the repository's packages once
	// each anyway (the build cache); one go vet keeps it to one process.
	cmd := exec.Command(goBin, append([]string{"vet"}, pkgs...)...)
	cmd.Dir = mod
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod -trimpath", "GOWORK=off", "GOPROXY=off")
	out, err := cmd.CombinedOutput()
	if err == nil {
		return
	}
	// Name each failing block by its markdown file and line.
	failed := map[string][]string{}
	for _, l := range strings.Split(string(out), "\n") {
		l = strings.TrimPrefix(strings.TrimSpace(l), "vet: ")
		for dir := range where {
			if strings.HasPrefix(l, dir+"/") || strings.HasPrefix(l, "./"+dir+"/") || strings.Contains(l, "docsnippets/"+dir) {
				failed[dir] = append(failed[dir], l)
			}
		}
	}
	if len(failed) == 0 {
		t.Fatalf("go vet on the doc snippets: %v\n%s", err, out)
	}
	dirs := make([]string, 0, len(failed))
	for d := range failed {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		s := where[d]
		src, _ := os.ReadFile(filepath.Join(mod, d, "snippet.go"))
		how := "fix it, or mark it <!-- snippet not compiled: why -->"
		if strings.HasSuffix(s.file, ".go") {
			how = "fix it (the package doc's blocks that parse as Go are compiled; line is the comment's)"
		}
		t.Errorf("%s:%d: the Go block does not build; %s:\n%s\ncompiled as:\n%s",
			s.file, s.line, how, strings.Join(failed[d], "\n"), src)
	}
}

// The comments before a block mark it; a block without one is compiled,
// and one that does not parse is refused, not passed over.
func TestDocSnippetMarks(t *testing.T) {
	dir := t.TempDir()
	md := "# T\n\n<!-- snippet given: var n int -->\n```go\nfmt.Println(n)\n```\n\n" +
		"<!-- snippet not compiled: half a line -->\n```go\nfoo(\n```\n\n```go\nfoo(\n```\n"
	if err := os.WriteFile(filepath.Join(dir, "T.md"), []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	got := docSnippets(t, dir, "T.md")
	if len(got) != 3 {
		t.Fatalf("%d blocks, want 3: %+v", len(got), got)
	}
	if strings.TrimSpace(got[0].given) != "var n int" || got[0].skip != "" || got[0].line != 4 {
		t.Errorf("block 1: %+v", got[0])
	}
	if src, err := snippetSource(got[0]); err != nil || !strings.Contains(src, `import "fmt"`) {
		t.Errorf("block 1 compiled as %q, %v", src, err)
	}
	if got[1].skip != "half a line" {
		t.Errorf("block 2: %+v", got[1])
	}
	if got[2].skip != "" {
		t.Errorf("block 3 is not marked: %+v", got[2])
	}
	if _, err := snippetSource(got[2]); err == nil {
		t.Error("block 3 does not parse, and snippetSource took it")
	}
}
