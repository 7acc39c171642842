package main

import (
	"flag"
	"net"
	"net/url"
	"path/filepath"
	"strconv"

	"github.com/tablekit/tablekit/emulator"
)

// Azurite's four commands, which tablekit runs too: the emulator's
// image links each name to the tablekit binary, and main runs the
// command its name says (argv[0]), so an image, a compose file or
// Testcontainers that runs Azurite's commands runs tablekit's emulator.
// azuriteServes is the service each serves alone; "" for azurite, which
// serves all three.
var azuriteServes = map[string]emulator.Service{
	"azurite":       "",
	"azurite-blob":  emulator.BlobService,
	"azurite-queue": emulator.QueueService,
	"azurite-table": emulator.TableService,
}

// azuriteArgs turns a run of the binary under one of Azurite's command
// names (argv0, such as /usr/local/bin/azurite-blob) into tablekit's
// arguments: that command, then args. Under another name it returns
// args unchanged.
func azuriteArgs(argv0 string, args []string) []string {
	name := filepath.Base(argv0)
	if _, ok := azuriteServes[name]; !ok {
		return args
	}
	return append([]string{name}, args...)
}

// serviceTitles are the services as Azurite's lines name them.
var serviceTitles = map[emulator.Service]string{emulator.BlobService: "Blob", emulator.QueueService: "Queue", emulator.TableService: "Table"}

// servedURL is a service an emulator serves and its URL.
type servedURL struct {
	service emulator.Service
	url     string
}

// servedURLs are inst's services and their URLs, in the order Azurite
// starts them, the services not served left out.
func servedURLs(inst *emulator.Instance) []servedURL {
	var out []servedURL
	for _, s := range []servedURL{{emulator.BlobService, inst.BlobURL}, {emulator.QueueService, inst.QueueURL}, {emulator.TableService, inst.TableURL}} {
		if s.url != "" {
			out = append(out, s)
		}
	}
	return out
}

// azuriteStartLines are the lines Azurite's command cmd prints on stdout
// as its services start, word for word (Azure/Azurite: src/azurite.ts,
// src/blob/main.ts, src/queue/main.ts, src/table/main.ts), with o's
// host and ports and the addresses inst listens at. Testcontainers waits
// for "... service is successfully listening" (azurite's).
func azuriteStartLines(cmd string, o *emulator.Options, inst *emulator.Instance) []string {
	ports := map[emulator.Service]int{emulator.BlobService: o.BlobPort, emulator.QueueService: o.QueuePort, emulator.TableService: o.TablePort}
	var lines []string
	for _, s := range servedURLs(inst) {
		title := serviceTitles[s.service]
		u, _ := url.Parse(s.url)
		// Node's form: the host as configured, or as the socket's
		// address says it (no brackets), a colon and the port.
		host := o.Host
		if host == "" {
			host = "127.0.0.1" // Start's default, and Azurite's
		}
		configured := host + ":" + strconv.Itoa(ports[s.service])
		addr, port, _ := net.SplitHostPort(u.Host)
		if ip := net.ParseIP(addr); ip != nil && ip.IsUnspecified() {
			// Go reports a socket on 0.0.0.0 as [::] (one socket for
			// both families); Node, as configured.
			addr = host
		}
		listening := u.Scheme + "://" + addr + ":" + port
		switch cmd {
		case "azurite":
			lines = append(lines,
				"Azurite "+title+" service is starting at "+u.Scheme+"://"+configured,
				"Azurite "+title+" service is successfully listening at "+listening)
		case "azurite-table":
			lines = append(lines,
				"Azurite Table service is starting on "+configured,
				"Azurite Table service successfully started on "+configured)
		default: // azurite-blob, azurite-queue
			lines = append(lines,
				"Azurite "+title+" service is starting on "+configured,
				"Azurite "+title+" service successfully listens on "+listening)
		}
	}
	return lines
}

// azuriteCloseLines are Azurite's lines as each service it serves
// closes, before and after (the same for its four commands).
func azuriteCloseLines(inst *emulator.Instance) (closing, closed []string) {
	for _, s := range servedURLs(inst) {
		title := serviceTitles[s.service]
		closing = append(closing, "Azurite "+title+" service is closing...")
		closed = append(closed, "Azurite "+title+" service successfully closed")
	}
	return closing, closed
}

// azuriteCommand is Azurite's command name, which runs the emulator as
// that command does: the services it serves, Azurite's lines on stdout,
// the data in the current directory unless --location or
// --inMemoryPersistence. Every flag of tablekit emulator works too.
func (a *app) azuriteCommand(name, serves, example string) *command {
	return &command{
		name: name, summary: "run the emulator as Azurite's " + name + " does: " + serves,
		about: `Runs tablekit's emulator as Azurite's command of this name runs Azurite, with
its flags (and tablekit emulator's): it serves ` + serves + `, keeps its data
in the current directory unless given --location (-l) or
--inMemoryPersistence, and prints Azurite's own lines on stdout as each
service starts and stops ("Azurite Blob service is successfully listening at
http://0.0.0.0:10000", ...), which Testcontainers waits for; the connection
string goes to stderr. The emulator's image links this name to tablekit, so
that images, compose files and Testcontainers that run Azurite's commands run
tablekit (docs/EMULATOR.md, "In a container").`,
		exits:   "0 stopped by SIGTERM or Ctrl-C; 1 could not start (a port in use); 2 usage\nerror.",
		example: "tablekit " + example + "\n  " + example + "    (a link named " + name + " to tablekit, as in the image)",
		flags: func(fs *flag.FlagSet) {
			a.emu.register(fs)
			a.emu.azurite = name
		},
		run: a.cmdEmulator,
	}
}
