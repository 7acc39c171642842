package cliconn_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/tablekit/tablekit"

	"github.com/tablekit/tablekit/cmd/internal/cliconn"
)

const devKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

func clearEnv(t *testing.T) {
	for _, v := range []string{"AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_ACCOUNT", "AZURE_STORAGE_TABLE_ENDPOINT", "AZURE_STORAGE_QUEUE_ENDPOINT", "AZURE_STORAGE_BLOB_ENDPOINT"} {
		t.Setenv(v, "")
	}
}

func TestConnectWithoutAnAccountIsAUsageError(t *testing.T) {
	clearEnv(t)
	_, err := (&cliconn.Options{}).Connect(nil)
	var ue cliconn.UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "AZURE_STORAGE_CONNECTION_STRING") {
		t.Fatalf("Connect with nothing set: %v, want a UsageError naming the variable", err)
	}
}

func TestConnectionStringFlagWinsOverTheEnvironment(t *testing.T) {
	clearEnv(t)
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", "AccountName=x;AccountKey=not base64!")
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	var o cliconn.Options
	o.Register(fs)
	if _, err := o.Connect(nil); !errors.Is(err, tablekit.ErrInvalidConnectionString) {
		t.Fatalf("the environment's invalid string: %v, want ErrInvalidConnectionString", err)
	}
	good := "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" + devKey + ";TableEndpoint=http://127.0.0.1:1/devstoreaccount1"
	if err := fs.Parse([]string{"--connection-string", good}); err != nil {
		t.Fatal(err)
	}
	acct, err := o.Connect(nil)
	if err != nil || acct.Name() != "devstoreaccount1" || acct.TableEndpoint() != "http://127.0.0.1:1/devstoreaccount1" {
		t.Fatalf("Connect with --connection-string: %v", err)
	}
}

func TestEndpointFlagsDefaultFromTheEnvironment(t *testing.T) {
	clearEnv(t)
	t.Setenv("AZURE_STORAGE_TABLE_ENDPOINT", "https://env.table.core.windows.net")
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	var o cliconn.Options
	o.Register(fs)
	if err := fs.Parse([]string{"--account", "acme"}); err != nil {
		t.Fatal(err)
	}
	if o.TableEndpoint != "https://env.table.core.windows.net" || o.Account != "acme" {
		t.Fatalf("flags: %+v", o)
	}
}

func TestMatchCommand(t *testing.T) {
	cases := []struct {
		args []string
		name string
		rest []string
		ok   bool
	}{
		{[]string{"poison", "list", "--queue", "q"}, "poison list", []string{"--queue", "q"}, true},
		{[]string{"poison"}, "poison list", nil, false},
		{[]string{"poison", "requeue"}, "poison list", nil, false},
		{[]string{"query", "T", "F"}, "query", []string{"T", "F"}, true},
	}
	for _, c := range cases {
		rest, ok := cliconn.MatchCommand(c.args, c.name)
		if ok != c.ok || strings.Join(rest, " ") != strings.Join(c.rest, " ") {
			t.Errorf("MatchCommand(%q, %q) = %q, %v", c.args, c.name, rest, ok)
		}
	}
}

func TestRedactingWriterHidesSecrets(t *testing.T) {
	var b bytes.Buffer
	w := cliconn.RedactingWriter{W: &b}
	msg := "error: AccountName=a;AccountKey=" + devKey + "; url http://h/t?sv=2020&sig=c2VjcmV0c2lnbmF0dXJl\n"
	if n, err := w.Write([]byte(msg)); err != nil || n != len(msg) {
		t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(msg))
	}
	if out := b.String(); strings.Contains(out, devKey) || strings.Contains(out, "c2VjcmV0c2lnbmF0dXJl") || !strings.Contains(out, "error: ") {
		t.Fatalf("written: %q", out)
	}
}

func TestPickCommand(t *testing.T) {
	names := []string{"poison list", "run"}
	usage := func(w io.Writer) { fmt.Fprint(w, "USAGE") }
	for _, c := range []struct {
		args             []string
		index, status    int
		rest             []string
		stdout, stderrIn string
	}{
		{args: nil, index: -1, status: 2, stderrIn: "USAGE"},
		{args: []string{"--help"}, index: -1, status: 0, stdout: "USAGE"},
		{args: []string{"poison", "list", "--json"}, index: 0, rest: []string{"--json"}},
		{args: []string{"run"}, index: 1, rest: []string{}},
		{args: []string{"poison", "drop"}, index: -1, status: 2, stderrIn: `prog: unknown command "poison drop"; run prog --help`},
	} {
		var out, errw strings.Builder
		i, rest, status := cliconn.PickCommand("prog", c.args, names, usage, &out, &errw)
		if i != c.index || status != c.status || strings.Join(rest, " ") != strings.Join(c.rest, " ") ||
			out.String() != c.stdout || !strings.Contains(errw.String(), c.stderrIn) {
			t.Errorf("PickCommand(%q) = %d, %q, %d; stdout %q, stderr %q", c.args, i, rest, status, out.String(), errw.String())
		}
	}
}

// The dest- flags name a second account: they never fall back on the
// first one's environment variable, and without them Given is false.
func TestPrefixedFlagsIgnoreTheEnvironment(t *testing.T) {
	clearEnv(t)
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey="+devKey+";TableEndpoint=http://127.0.0.1:1/devstoreaccount1")
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	var src, dst cliconn.Options
	src.Register(fs)
	dst.RegisterPrefixed(fs, "dest-", "the target")
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if dst.Given() {
		t.Fatal("Given with no dest- flag")
	}
	if _, err := dst.Connect(nil); err == nil {
		t.Fatal("dest- options without flags connected with the environment's string")
	}
	if err := fs.Parse([]string{"--dest-connection-string", "DefaultEndpointsProtocol=http;AccountName=other;AccountKey=" + devKey + ";TableEndpoint=http://127.0.0.1:2/other"}); err != nil {
		t.Fatal(err)
	}
	acct, err := dst.Connect(nil)
	if err != nil || !dst.Given() || acct.Name() != "other" {
		t.Fatalf("--dest-connection-string: %v, %v", acct, err)
	}
}

// The flag package writes a flag with one dash in its errors; FlagError
// writes two, as every document does, whichever the user typed.
func TestFlagErrorWritesTwoDashes(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--bogus"}, "flag provided but not defined: --bogus"},
		{[]string{"-bogus"}, "flag provided but not defined: --bogus"},
		{[]string{"--n"}, "flag needs an argument: --n"},
		{[]string{"-n", "x"}, `invalid value "x" for flag --n: parse error`},
		{[]string{"--n", `a "-n" b`}, `invalid value "a \"-n\" b" for flag --n: parse error`},
		{[]string{"--b=maybe"}, `invalid boolean value "maybe" for --b: parse error`},
		{[]string{"---x"}, "bad flag syntax: ---x"},
	}
	for _, c := range cases {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fs.Int("n", 0, "")
		fs.Bool("b", false, "")
		err := cliconn.FlagError(fs.Parse(c.args))
		var ue cliconn.UsageError
		if err == nil || err.Error() != c.want || !errors.As(err, &ue) {
			t.Errorf("%v: %v, want the usage error %q", c.args, err, c.want)
		}
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if err := cliconn.FlagError(fs.Parse([]string{"-h"})); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v, want flag.ErrHelp", err)
	}
	if err := cliconn.FlagError(fs.Parse(nil)); err != nil {
		t.Errorf("no flags: %v", err)
	}
}

func TestPickCommandHelp(t *testing.T) {
	names := []string{"query", "poison list"}
	cases := []struct {
		args       []string
		index      int
		rest       []string
		status     int
		out, inErr string
	}{
		{[]string{"help"}, -1, nil, 0, "USAGE", ""},
		{[]string{"--help"}, -1, nil, 0, "USAGE", ""},
		{[]string{"help", "query"}, 0, []string{"--help"}, 0, "", ""},
		{[]string{"help", "poison", "list"}, 1, []string{"--help"}, 0, "", ""},
		{[]string{"help", "poison"}, -1, nil, 0, "Usage: prog poison COMMAND [flags]\n\nCommands:\n  prog poison list\n\nRun prog poison list --help for a command's flags.\n", ""},
		{[]string{"help", "bogus"}, -1, nil, 2, "", `unknown command "bogus"`},
		{[]string{"help", "query", "x"}, -1, nil, 2, "", `unknown command "query x"`},
		{[]string{"query", "--help"}, 0, []string{"--help"}, 0, "", ""},
	}
	for _, c := range cases {
		var out, errOut strings.Builder
		i, rest, status := cliconn.PickCommand("prog", c.args, names, func(w io.Writer) { io.WriteString(w, "USAGE") }, &out, &errOut)
		if i != c.index || !slices.Equal(rest, c.rest) || status != c.status || out.String() != c.out || !strings.Contains(errOut.String(), c.inErr) {
			t.Errorf("%v: %d %q %d, stdout %q, stderr %q; want %d %q %d, %q, %q", c.args, i, rest, status, out.String(), errOut.String(), c.index, c.rest, c.status, c.out, c.inErr)
		}
	}
}
