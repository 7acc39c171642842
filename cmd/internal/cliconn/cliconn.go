// Package cliconn is how tablekit's commands (tablekit and tablekit-worker)
// connect to a storage account: one set of flags and environment
// variables, one Connect, one way to keep secrets out of what they print.
package cliconn

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"

	"github.com/tablekit/tablekit"
)

// Options are the connection flags. The zero value connects with
// $AZURE_STORAGE_CONNECTION_STRING.
type Options struct {
	// ConnectionString is a storage connection string; empty means
	// $AZURE_STORAGE_CONNECTION_STRING.
	ConnectionString string
	// Account names a public-cloud account whose endpoints are used with
	// Microsoft Entra ID when there is no connection string.
	Account string
	// TableEndpoint, QueueEndpoint and BlobEndpoint are service URLs used
	// with Entra ID; they override the ones Account implies.
	TableEndpoint, QueueEndpoint, BlobEndpoint string
	// NoEnv makes Connect ignore $AZURE_STORAGE_CONNECTION_STRING: the
	// options of a second account (RegisterPrefixed), which never falls
	// back on the first one's variable.
	NoEnv bool
}

// RegisterPrefixed adds the same flags as Register with a prefix
// ("dest-": --dest-connection-string, --dest-account, ...), for a second
// account described by what ("the target table"), without environment
// defaults. It sets NoEnv.
func (o *Options) RegisterPrefixed(fs *flag.FlagSet, prefix, what string) {
	o.NoEnv = true
	fs.StringVar(&o.ConnectionString, prefix+"connection-string", "", "storage connection string of "+what+"'s account; none of the "+prefix+" flags: the connected account")
	fs.StringVar(&o.Account, prefix+"account", "", "storage account name of "+what+": public-cloud endpoints with Entra ID")
	fs.StringVar(&o.TableEndpoint, prefix+"table-endpoint", "", "table service URL of "+what+"'s account, with Entra ID")
	fs.StringVar(&o.QueueEndpoint, prefix+"queue-endpoint", "", "queue service URL of "+what+"'s account, with Entra ID")
	fs.StringVar(&o.BlobEndpoint, prefix+"blob-endpoint", "", "blob service URL of "+what+"'s account, with Entra ID")
}

// Given reports whether any connection setting is set (not counting
// the environment).
func (o *Options) Given() bool {
	return o.ConnectionString != "" || o.Account != "" || o.TableEndpoint != "" || o.QueueEndpoint != "" || o.BlobEndpoint != ""
}

// Register adds --connection-string, --account, --table-endpoint,
// --queue-endpoint and --blob-endpoint to fs, with defaults from their
// environment variables (a flag given on the command line wins).
func (o *Options) Register(fs *flag.FlagSet) {
	fs.StringVar(&o.ConnectionString, "connection-string", "", "storage connection string (env AZURE_STORAGE_CONNECTION_STRING); UseDevelopmentStorage=true means Azurite's default ports")
	fs.StringVar(&o.Account, "account", Env("AZURE_STORAGE_ACCOUNT", ""), "storage account name: public-cloud endpoints with Entra ID (env AZURE_STORAGE_ACCOUNT)")
	fs.StringVar(&o.TableEndpoint, "table-endpoint", Env("AZURE_STORAGE_TABLE_ENDPOINT", ""), "table service URL, with Entra ID (env AZURE_STORAGE_TABLE_ENDPOINT)")
	fs.StringVar(&o.QueueEndpoint, "queue-endpoint", Env("AZURE_STORAGE_QUEUE_ENDPOINT", ""), "queue service URL, with Entra ID (env AZURE_STORAGE_QUEUE_ENDPOINT)")
	fs.StringVar(&o.BlobEndpoint, "blob-endpoint", Env("AZURE_STORAGE_BLOB_ENDPOINT", ""), "blob service URL, with Entra ID (env AZURE_STORAGE_BLOB_ENDPOINT)")
}

// Connect connects with the connection string (the flag, else
// $AZURE_STORAGE_CONNECTION_STRING), or else with Entra ID, through
// azidentity's DefaultAzureCredential, on the account's or the given
// endpoints. With neither it returns a UsageError. It makes no request.
func (o *Options) Connect(opts *tablekit.AccountOptions) (*tablekit.Account, error) {
	cs := o.ConnectionString
	if cs == "" && !o.NoEnv {
		cs = tablekit.ConnectionStringFromEnv("")
	}
	if cs != "" {
		return tablekit.Connect(cs, opts)
	}
	ep := tablekit.Endpoints{Table: o.TableEndpoint, Queue: o.QueueEndpoint, Blob: o.BlobEndpoint}
	if o.Account != "" {
		def := tablekit.AccountEndpoints(o.Account)
		if ep.Table == "" {
			ep.Table = def.Table
		}
		if ep.Queue == "" {
			ep.Queue = def.Queue
		}
		if ep.Blob == "" {
			ep.Blob = def.Blob
		}
	}
	if ep.Table == "" && ep.Queue == "" && ep.Blob == "" {
		return nil, UsageError{"no account: set AZURE_STORAGE_CONNECTION_STRING, --connection-string, --account or the endpoint flags; " +
			"for a local emulator, start `tablekit emulator` and set AZURE_STORAGE_CONNECTION_STRING=UseDevelopmentStorage=true"}
	}
	cred, err := azidentity.NewDefaultAzureCredential(nil)
	if err != nil {
		return nil, err
	}
	return tablekit.NewAccountWithCredential(ep, cred, opts)
}

// UsageError is a mistake on the command line: the commands print it and
// exit with status 2.
type UsageError struct{ Msg string }

// Error returns the message.
func (e UsageError) Error() string { return e.Msg }

// Env returns the trimmed value of the environment variable name, or def
// when it is unset or blank.
func Env(name, def string) string {
	if v := strings.TrimSpace(os.Getenv(name)); v != "" {
		return v
	}
	return def
}

// RedactingWriter passes every write through tablekit.Redact: whatever
// reaches it (error messages and log records, each written whole in one
// call) shows no SAS signature, account key or SAS setting, even if an
// error from outside tablekit prints a URL or a connection string.
type RedactingWriter struct{ W io.Writer }

// Write writes p, redacted, to W; it reports len(p) when the redacted
// text was written whole.
func (r RedactingWriter) Write(p []byte) (int, error) {
	s := string(p)
	if red := tablekit.Redact(s); red != s {
		if _, err := io.WriteString(r.W, red); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return r.W.Write(p)
}

// PickCommand chooses the subcommand of prog (a command's name) that args
// start with, among names (several words allowed: "poison list"), and
// returns its index and the arguments after its name. "help CMD" picks
// CMD with the arguments ["--help"], so that the command prints its own
// help as "CMD --help" does. When there is nothing to run it answers
// itself and returns index -1 with the exit status: usage(stderr) and 2
// for no arguments, usage(stdout) and 0 for a help flag or a bare "help",
// the list of a group's commands on stdout and 0 for "GROUP --help" or
// "help GROUP" (the first word of several commands: "poison"), a message
// on stderr and 2 for an unknown command (after "help" too).
func PickCommand(prog string, args, names []string, usage func(io.Writer), stdout, stderr io.Writer) (index int, rest []string, status int) {
	if len(args) == 0 {
		usage(stderr)
		return -1, nil, 2
	}
	switch args[0] {
	case "-h", "-help", "--help":
		usage(stdout)
		return -1, nil, 0
	case "help":
		if len(args) == 1 {
			usage(stdout)
			return -1, nil, 0
		}
		for i, name := range names {
			if r, ok := MatchCommand(args[1:], name); ok && len(r) == 0 {
				return i, []string{"--help"}, 0
			}
		}
		if len(args) == 2 && groupUsage(stdout, prog, args[1], names) {
			return -1, nil, 0
		}
		fmt.Fprintf(stderr, "%s help: unknown command %q; run %s --help for the list\n", prog, strings.Join(args[1:], " "), prog)
		return -1, nil, 2
	}
	for i, name := range names {
		if r, ok := MatchCommand(args, name); ok {
			return i, r, 0
		}
	}
	if len(args) == 2 && isHelpFlag(args[1]) && groupUsage(stdout, prog, args[0], names) {
		return -1, nil, 0
	}
	fmt.Fprintf(stderr, "%s: unknown command %q; run %s --help\n", prog, strings.Join(args, " "), prog)
	return -1, nil, 2
}

func isHelpFlag(s string) bool { return s == "-h" || s == "-help" || s == "--help" }

// groupUsage lists the commands whose first word is group ("poison":
// "poison list", "poison requeue") and reports whether there were any.
func groupUsage(w io.Writer, prog, group string, names []string) bool {
	var in []string
	for _, name := range names {
		if first, _, ok := strings.Cut(name, " "); ok && first == group {
			in = append(in, name)
		}
	}
	if len(in) == 0 {
		return false
	}
	fmt.Fprintf(w, "Usage: %s %s COMMAND [flags]\n\nCommands:\n", prog, group)
	for _, name := range in {
		fmt.Fprintf(w, "  %s %s\n", prog, name)
	}
	fmt.Fprintf(w, "\nRun %s %s --help for a command's flags.\n", prog, in[0])
	return true
}

// MatchCommand reports whether args start with the words of the command
// name ("poison list"), and returns the arguments after them.
func MatchCommand(args []string, name string) (rest []string, ok bool) {
	words := strings.Fields(name)
	if len(args) < len(words) || strings.Join(args[:len(words)], " ") != name {
		return nil, false
	}
	return args[len(words):], true
}
