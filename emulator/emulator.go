// Package emulator is tablekit's own Azure Storage emulator: the Table,
// Queue and Blob services in Go, answering as Azure answers, in the calling
// process (like net/http/httptest) or standalone (`tablekit emulator`).
//
// Start one per test binary from TestMain, or one per test with StartTB;
// starting takes well under a millisecond, and an instance is safe under
// parallel tests:
//
//	func TestOrders(t *testing.T) {
//		em := emulator.StartTB(t, nil)
//		acct, err := tablekit.Connect(em.ConnectionString, nil)
//		// ...
//	}
//
// Any SDK points at it with the connection string, which has explicit
// endpoints (path-style, http://127.0.0.1:PORT/devstoreaccount1) and the
// well-known development account and key, or the ones Options chooses.
// Options.Accounts serves several accounts on the same ports, each with
// its own data (Instance.ConnectionStringFor gives each one's).
// Options.Services serves some of the three services only, as Azurite's
// azurite-blob, azurite-queue and azurite-table each serve one.
//
// # Data kept on disk
//
// By default everything is in memory and gone at Stop. Options.Location
// keeps the three services' data in a directory across restarts and
// crashes, each write on disk before it is answered; ResetLocation empties
// one. docs/EMULATOR.md, "Data kept on disk", has the figures.
//
// # HTTPS and tokens
//
// Options.HTTPS serves the three services over TLS with a certificate made
// at Start (Instance.HTTPClient trusts it); Options.CertFile and KeyFile
// (or a PFX and CertPassword), or Options.TLS, serve one of the user's, and
// NewCertificate makes one to keep. Options.OAuth = OAuthBasic accepts
// Microsoft Entra ID bearer tokens as Azurite's --oauth basic does, so code
// that uses azidentity runs against the emulator:
//
//	em := emulator.StartTB(t, &emulator.Options{HTTPS: true, OAuth: emulator.OAuthBasic})
//	client, err := azblob.NewClient(em.BlobURL, cred,
//		&azblob.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: em.HTTPClient()}})
//
// # A clock the test controls
//
// What Azure does with time happens at once when a test says so:
// Instance.Advance moves the emulator's clock forward, as miniredis's
// FastForward does, and queue messages become visible or expire, leases
// expire and finish breaking, SAS and token lifetimes end, without
// waiting. The clock otherwise keeps real time:
//
//	_, err = q.EnqueueMessage(ctx, "later", &azqueue.EnqueueMessageOptions{VisibilityTimeout: to.Ptr[int32](30)})
//	em.Advance(30 * time.Second) // the message is visible now
//
// Where nothing can call Advance (an Example, a worker in a process of its
// own), Options.ClockRate runs the clock faster than real time instead.
//
// # Azure's rules, not Azurite's
//
// The emulator applies Azure Table storage's rules always: the limits
// docs/RULES.md lists (transactions of one partition and at most 100
// operations, 252 properties, 1 MiB entities, property names, $top at most
// 1,000, malformed filters refused), keys ordered by UTF-16 code units,
// Shared Key, Shared Key Lite and SAS checked as Azure checks them. The
// rules are the same definitions tablekit's client checks and the Azurite
// harness's strict proxy use (azrules, answered by emulator/answer). With Options.Cosmos it
// applies the Cosmos DB Table API's profile instead.
//
// # Azure's scale
//
// Options.Latency, Options.Throttle and Options.Scale make it answer as a
// busy account does: latency per request, 503 ServerBusy over a partition's
// or the account's target, and query pages whose service time grows with
// the entities they read, on simulated partition servers. Options.EarlyEnd
// ends query pages early, as Azure may, so code that stops at a short or
// empty page fails in a test as it would on Azure. docs/EMULATOR.md says
// what the model is and what it is not.
package emulator

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit/azrules"
	"github.com/tablekit/tablekit/emulator/internal/auth"
	"github.com/tablekit/tablekit/emulator/internal/blobs"
	"github.com/tablekit/tablekit/emulator/internal/disk"
	"github.com/tablekit/tablekit/emulator/internal/headcase"
	"github.com/tablekit/tablekit/emulator/internal/queues"
	"github.com/tablekit/tablekit/emulator/internal/tables"
	"github.com/tablekit/tablekit/emulator/load"
)

// The well-known development account, the one Azurite and Azure's own
// emulators use (azrules.DevAccountName, azrules.DevAccountKey). They are
// public and work only against emulators.
const (
	DevAccountName = azrules.DevAccountName
	DevAccountKey  = azrules.DevAccountKey
)

// The ports Azurite and the Azure Storage Emulator listen on by default,
// which Storage Explorer and UseDevelopmentStorage=true assume
// (azrules' defaults).
const (
	DefaultBlobPort  = azrules.DefaultBlobPort
	DefaultQueuePort = azrules.DefaultQueuePort
	DefaultTablePort = azrules.DefaultTablePort
)

// EarlyEnd makes query pages end early as Azure's may (see tables.EarlyEnd).
type EarlyEnd = tables.EarlyEnd

// NoEarlyEndHeader, set (to any value) on a query, exempts it from
// Options.EarlyEnd: its page ends only at $top or at the end of its range.
// A test that asserts how many requests an operation takes sets it on its
// client (tools/testenv's CountingAccount does); the rest of the suite
// still sees pages end early. Azure ignores the header.
const NoEarlyEndHeader = tables.NoEarlyEndHeader

// Options configures Start. A nil *Options means the defaults.
type Options struct {
	// AccountName and AccountKey (base64) are the account the emulator
	// serves. Empty means DevAccountName and DevAccountKey, unless
	// Accounts is set.
	AccountName, AccountKey string
	// Accounts, when set, are the accounts the emulator serves instead
	// (AccountName and AccountKey must then be empty), as Azurite's
	// AZURITE_ACCOUNTS sets them (ParseAccounts reads its format): all on
	// the same ports, told apart by the path's first segment
	// (http://127.0.0.1:PORT/ACCOUNT/...), each with tables, queues and
	// containers of its own and checked against its own keys. The first is
	// the Instance's AccountName and ConnectionString; ConnectionStringFor
	// gives the others'. The development account is not served unless it
	// is listed, as in Azurite.
	Accounts []Account
	// Host is the address the services listen on. Empty means 127.0.0.1.
	Host string
	// BlobPort, QueuePort and TablePort are the services' ports. Zero
	// means a free port chosen by the system (DefaultTablePort and the
	// others are what Storage Explorer expects).
	BlobPort, QueuePort, TablePort int
	// Cosmos applies the Cosmos DB Table API's profile to the Table
	// service: its name and size rules, case-sensitive table names and
	// results that are not sorted.
	Cosmos bool
	// EarlyEnd, when set, ends query pages early (seeded), possibly
	// empty, with a continuation, as Azure may.
	EarlyEnd *EarlyEnd
	// ClockRate, above 1, makes the emulator's clock run that many times
	// as fast as real time, from its start: at 50, a queue message
	// enqueued with a one-second delay is visible 20 ms later, and a
	// 60-second lease ends after 1.2 s. It is for tests whose code waits
	// on Azure's time without a handle on the emulator to call Advance
	// (an Example, a worker in another process), and it reaches what
	// Advance reaches; Advance adds to it. 0 and 1 keep real time; below
	// 1 or above MaxClockRate is an error.
	ClockRate float64
	// Latency is added to every request to the Table service, before the
	// service works on it, as in the Azurite harness (azurite.Options):
	// as if the service were across a network. A client that gives up
	// meanwhile is not answered and its request does nothing. Zero means
	// none.
	Latency time.Duration
	// LatencyJitter adds a random delay, uniform in [0, LatencyJitter),
	// to Latency for each request. Zero means none.
	LatencyJitter time.Duration
	// LatencyDistribution, when set, replaces Latency and LatencyJitter
	// with a seeded distribution: fixed, uniform and log-normal parts
	// (median and 99th percentile).
	LatencyDistribution *LatencyOptions
	// Throttle answers 503 ServerBusy, as Azure does, once a partition or
	// the account is over its scalability target; it means exactly what
	// azurite.Options.Throttle means (the same code), except that a query
	// page costs the entities it scanned, which the emulator knows.
	// &ThrottleOptions{} is Azure's targets; nil means none, unless Scale
	// is set.
	Throttle *ThrottleOptions
	// Scale runs the Table service on the scale model: partitions spread
	// over simulated partition servers, each serving pages one at a time
	// for a service time that grows with the entities they scan, and
	// Azure's targets (Scale.Throttle, or Throttle when set). &ScaleOptions{}
	// is Azure's published targets at full scale; ScaleOptions.Scale
	// scales them down for a small machine. nil means no model: work
	// takes no simulated time.
	Scale *ScaleOptions
	// SkipAPIVersionCheck serves a request whatever its x-ms-version, as
	// Azurite's --skipApiVersionCheck does, for a client newer than
	// NewestServiceVersion. By default the emulator answers a version it
	// does not know as Azure does: 400 InvalidHeaderValue.
	SkipAPIVersionCheck bool
	// Log, when set, gets a line per request on every service: the time,
	// the service, the client's address, the method, the target with
	// any SAS signature redacted, the status, the error code ("-" for
	// none) and the time taken. It never holds a key, a signature or a
	// token. Nil means no log (tablekit emulator logs to stderr unless
	// --silent).
	Log io.Writer
	// DebugLog, when set, gets more: each request's line followed by
	// its headers and its answer's (Authorization and other credentials
	// redacted) and the servers' own error log (a handler's panic, a
	// failed accept or TLS handshake). Nil means none.
	DebugLog io.Writer
	// HTTPS serves the three services over TLS with a certificate the
	// emulator makes at Start for localhost, 127.0.0.1 and ::1;
	// Instance.RootCAs trusts it and Instance.HTTPClient uses it. TLS or
	// CertFile, when set, serve their certificate instead.
	HTTPS bool
	// TLS, when set, serves the three services over TLS with this
	// configuration (its Certificates); Start uses a copy.
	TLS *tls.Config
	// CertFile and KeyFile serve the three services over TLS with a PEM
	// certificate (chain) and key, as Azurite's --cert and --key do. With
	// KeyFile empty, CertFile is a PKCS #12 (PFX) file opened with
	// CertPassword (Azurite's --pwd); only the legacy PFX encryption
	// (3DES or RC2, OpenSSL 3's -legacy) is read.
	CertFile, KeyFile, CertPassword string
	// OAuth is OAuthBasic to accept Microsoft Entra ID bearer tokens, as
	// Azurite's --oauth basic does; it needs HTTPS, TLS or CertFile.
	// Empty accepts Shared Key and SAS only.
	OAuth string
	// Location is a directory where the services keep what they store,
	// across restarts (Azurite's --location): tables and entities in
	// tables.db, queues and messages in queues.db, containers and blobs in
	// blobs.db (contents over 64 KiB in files of their own in blobdata/),
	// each write on disk before it is answered, so a process killed at
	// any moment loses no answered write and leaves no transaction half
	// done. The development account (devstoreaccount1) keeps its data in
	// the directory itself, any other account (Options.Accounts) in a
	// directory of its name beneath it. One emulator at a time may use a
	// location: Start fails, naming the file, when another holds it.
	// Empty means memory only (the default): nothing is kept after Stop.
	Location string
	// Services are the services Start serves, as Azurite's azurite-blob,
	// azurite-queue and azurite-table each serve one. Nil or empty means
	// all three. A service left out does not listen: its URL in the
	// Instance is empty and the connection string has no endpoint for
	// it; nor is its data opened in Location, so that another emulator
	// may serve it from the same directory, as Azurite's separate
	// services share one. Start fails on a name it does not know or
	// given twice.
	Services []Service

	// timeouts replaces the servers' limits in this package's tests.
	timeouts *timeouts
}

// Service names one of the emulator's services (Options.Services).
type Service string

// The three services, as Azurite's command names them (azurite-blob,
// azurite-queue, azurite-table) and in the order it starts them.
const (
	BlobService  Service = "blob"
	QueueService Service = "queue"
	TableService Service = "table"
)

// AllServices are the three services, in the order Azurite starts them.
var AllServices = []Service{BlobService, QueueService, TableService}

// ParseServices reads a comma-separated list of services ("blob,table"),
// as tablekit emulator --services takes it; an empty list is all three.
func ParseServices(list string) ([]Service, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	var out []Service
	for _, name := range strings.Split(list, ",") {
		out = append(out, Service(strings.ToLower(strings.TrimSpace(name))))
	}
	if _, err := servedSet(out); err != nil {
		return nil, err
	}
	return out, nil
}

// servedSet is the set of services a list names: all three for none, an
// error for a name that is not a service or given twice.
func servedSet(list []Service) (map[Service]bool, error) {
	set := make(map[Service]bool, len(AllServices))
	if len(list) == 0 {
		for _, s := range AllServices {
			set[s] = true
		}
		return set, nil
	}
	for _, s := range list {
		switch s {
		case BlobService, QueueService, TableService:
		default:
			return nil, fmt.Errorf("emulator: service %q: want blob, queue or table", string(s))
		}
		if set[s] {
			return nil, fmt.Errorf("emulator: service %q given twice", string(s))
		}
		set[s] = true
	}
	return set, nil
}

// ThrottleOptions sets the scalability targets: 2,000 entities a second
// per partition and 20,000 per account by default (see Options.Throttle).
type ThrottleOptions = load.ThrottleOptions

// ScaleOptions sets the scale model (see Options.Scale and
// docs/EMULATOR.md).
type ScaleOptions = load.ModelOptions

// LatencyOptions sets a latency distribution (see
// Options.LatencyDistribution).
type LatencyOptions = load.LatencyOptions

// Stats counts what the Table service's load model has done since Start.
type Stats = load.ModelStats

// Instance is a running emulator.
type Instance struct {
	// ConnectionString has explicit endpoints and the account's key.
	ConnectionString string
	// BlobURL, QueueURL and TableURL are the service endpoints, such as
	// http://127.0.0.1:41234/devstoreaccount1; empty for a service not
	// served (Options.Services).
	BlobURL, QueueURL, TableURL string
	// DirectTableURL serves the same tables as TableURL without Latency,
	// Throttle and Scale (on a port of its own when any is set; else it
	// is TableURL), as the Azurite harness's DirectTableURL does: a
	// benchmark loads its data through it and measures through TableURL.
	DirectTableURL string
	// AccountName and AccountKey are the account it serves.
	AccountName, AccountKey string
	// RootCAs trusts the certificate the services present when the
	// emulator made it (Options.HTTPS); nil otherwise.
	RootCAs *x509.CertPool

	servers  []*http.Server
	conns    []*conns          // servers[i]'s connections
	model    *load.Model       // nil without Throttle or Scale
	tables   []*tables.Service // one per account
	queues   []*queues.Service // one per account
	blobs    []*blobs.Service  // one per account
	accounts []Account         // the accounts served, the first this Instance's
	clock    *clock            // the services' time (Advance)
	stopOnce sync.Once
}

// Stats returns what the Table service's load model (Options.Throttle or
// Options.Scale) has counted: requests throttled, entities charged, pages
// served and the time they queued. It is zero without either option.
func (i *Instance) Stats() Stats {
	if i.model == nil {
		return Stats{}
	}
	return i.model.Stats()
}

// EarlyEndStats counts the query pages Options.EarlyEnd ended early.
type EarlyEndStats struct {
	// Pages is how many pages ended before $top entities and before the
	// end of their range, with a continuation.
	Pages int64
	// Empty is how many of those held no entity.
	Empty int64
}

// EarlyEnds returns what Options.EarlyEnd has done since Start: a test
// that means to prove code exact under early ends checks that some
// happened. It is zero without EarlyEnd.
func (i *Instance) EarlyEnds() EarlyEndStats {
	var st EarlyEndStats
	for _, t := range i.tables {
		pages, empty := t.EarlyEnds()
		st.Pages += pages
		st.Empty += empty
	}
	return st
}

// delayed holds each request for l's next delay before h serves it; a
// request whose client gives up meanwhile is dropped unanswered.
func delayed(l *load.Latency, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if l.Wait(r.Context()) != nil {
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Start starts the Table, Queue and Blob services (those
// Options.Services names) in this process and returns once they accept
// connections. ctx bounds the startup only; the
// services run until Stop.
func Start(ctx context.Context, opts *Options) (*Instance, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("emulator: %w", err)
	}
	if o.Host == "" {
		o.Host = "127.0.0.1"
	}
	accts, err := o.accounts()
	if err != nil {
		return nil, err
	}
	served, err := servedSet(o.Services)
	if err != nil {
		return nil, err
	}
	// A service not served keeps its data in memory, where nothing
	// reaches it: its file in Location stays free for another emulator.
	locationOf := func(s Service, name string) string {
		if !served[s] {
			return ""
		}
		return accountLocation(o.Location, name)
	}
	o.AccountName, o.AccountKey = accts[0].Name, accts[0].Keys[0]
	tlsConfig, rootCAs, err := serverTLS(&o)
	if err != nil {
		return nil, err
	}
	switch o.OAuth {
	case "":
	case OAuthBasic:
		if tlsConfig == nil {
			return nil, errors.New("emulator: OAuth needs HTTPS (Options.HTTPS, TLS or CertFile), as Azurite's --oauth needs --cert")
		}
	default:
		return nil, fmt.Errorf("emulator: OAuth level %q: want %q or empty", o.OAuth, OAuthBasic)
	}
	scheme := "http"
	if tlsConfig != nil {
		scheme = "https"
	}

	clk, err := newClock(o.ClockRate)
	if err != nil {
		return nil, err
	}
	inst := &Instance{AccountName: o.AccountName, AccountKey: o.AccountKey, RootCAs: rootCAs, accounts: accts, clock: clk}
	now := inst.clock.now
	var tableLoad tables.Load
	switch {
	case o.Scale != nil:
		mo := *o.Scale
		if o.Throttle != nil {
			mo.Throttle = *o.Throttle
		}
		inst.model = load.NewModel(mo)
		tableLoad = inst.model
	case o.Throttle != nil:
		// Targets alone: the model's throttle, its work taking no time.
		inst.model = load.NewModel(load.ModelOptions{Throttle: *o.Throttle, EntityTime: -1})
		tableLoad = inst.model
	}
	lat := load.LatencyOptions{Fixed: o.Latency, Jitter: o.LatencyJitter}
	if o.LatencyDistribution != nil {
		lat = *o.LatencyDistribution
	}
	// Each account has services of its own; one router per port sends a
	// request to its account's.
	tableRouter, directRouter, blobRouter, queueRouter := accountRouter{}, accountRouter{}, accountRouter{}, accountRouter{}
	// A copy whose source names another account reads it from that
	// account's Blob service (filled before any request is served).
	blobServices := map[string]*blobs.Service{}
	peers := func(name string) *blobs.Service { return blobServices[name] }
	for _, a := range accts {
		authn := auth.New(auth.Account{Name: a.Name, Keys: a.decoded})
		authn.SetClock(now)
		authn.SetDateClock(time.Now) // clients date requests by the real clock
		if o.OAuth == OAuthBasic {
			authn.EnableBearer(true)
		}
		tcfg := tables.Config{Account: a.Name, Auth: authn, Cosmos: o.Cosmos, EarlyEnd: o.EarlyEnd, Load: tableLoad, Now: now}
		ts := tables.New(tcfg)
		if location := locationOf(TableService, a.Name); location != "" {
			db, err := disk.Open(location, disk.TablesFile)
			if err != nil {
				inst.Stop()
				return nil, err
			}
			if ts, err = tables.Open(tcfg, db); err != nil {
				db.Close()
				inst.Stop()
				return nil, err
			}
		}
		inst.tables = append(inst.tables, ts)
		tableRouter[a.Name] = ts
		directRouter[a.Name] = ts.Unmodelled()
		bs, err := blobs.Open(blobs.Config{Account: a.Name, Auth: authn, Location: locationOf(BlobService, a.Name), Now: now, Peers: peers})
		if err != nil {
			inst.Stop()
			return nil, err
		}
		blobServices[a.Name] = bs
		inst.blobs = append(inst.blobs, bs)
		blobRouter[a.Name] = bs
		qs, err := queues.Open(queues.Config{Account: a.Name, Auth: authn, Location: locationOf(QueueService, a.Name), Now: now})
		if err != nil {
			inst.Stop()
			return nil, err
		}
		// A SAS naming a table's, a container's or a queue's stored
		// access policy (si) is checked against it.
		authn.SetPolicies(func(svc auth.Service, name, id string) (auth.AccessPolicy, bool) {
			switch svc {
			case auth.Table:
				return ts.Policy(name, id)
			case auth.Blob:
				return bs.Policy(name, id)
			case auth.Queue:
				return qs.Policy(name, id)
			}
			return auth.AccessPolicy{}, false
		})
		inst.queues = append(inst.queues, qs)
		queueRouter[a.Name] = qs
	}
	var tableHandler http.Handler = tableRouter.with(accts[0].Name)
	l := load.NewLatency(lat)
	if !l.Zero() {
		tableHandler = delayed(l, tableHandler)
	}
	blobHandler := blobRouter.with(accts[0].Name)
	queueHandler := queueRouter.with(accts[0].Name)
	directTables := directRouter.with(accts[0].Name)
	if !o.SkipAPIVersionCheck {
		blobHandler = versionChecked(blobHandler, false)
		queueHandler = versionChecked(queueHandler, false)
		tableHandler = versionChecked(tableHandler, true)
		directTables = versionChecked(directTables, true)
	}
	// metaCase: the service keeps metadata, whose names keep the case they
	// were sent in (headcase); the Table service has none, and its
	// connections are Go's own.
	type service struct {
		name     Service // in the request log
		port     int
		handler  http.Handler
		url      *string
		metaCase bool
	}
	services := []service{
		{"blob", o.BlobPort, blobHandler, &inst.BlobURL, true},
		{"queue", o.QueuePort, queueHandler, &inst.QueueURL, true},
		{"table", o.TablePort, tableHandler, &inst.TableURL, false},
	}
	services = slices.DeleteFunc(services, func(s service) bool { return !served[s.name] })
	if served[TableService] && (tableLoad != nil || !l.Zero()) {
		services = append(services, service{"table-direct", 0, directTables, &inst.DirectTableURL, false})
	}
	t := &defaultTimeouts
	if o.timeouts != nil {
		t = o.timeouts
	}
	lg := newRequestLog(o.Log, o.DebugLog)
	for _, s := range services {
		ln, err := net.Listen("tcp", net.JoinHostPort(o.Host, strconv.Itoa(s.port)))
		if err != nil {
			inst.Stop()
			return nil, fmt.Errorf("emulator: %w", err)
		}
		// No ReadTimeout or WriteTimeout: a body's and an answer's time
		// grows with their size (guard), as Azure's does.
		cs := new(conns)
		handler := s.handler
		var connContext func(context.Context, net.Conn) context.Context
		if tlsConfig != nil && s.metaCase {
			// headcase's connections wrap the TLS ones, which net/http
			// then does not see: the requests get their TLS state here.
			handler, connContext = withTLSState(handler), withConn
		}
		srv := &http.Server{
			Handler:           guard(string(s.name), handler, t, lg),
			ConnContext:       connContext,
			ConnState:         cs.track,
			ReadHeaderTimeout: t.headerTimeout,
			IdleTimeout:       t.idleTimeout,
			MaxHeaderBytes:    maxHeaderBytes,
			ErrorLog:          lg.errorLog(),
		}
		inst.servers = append(inst.servers, srv)
		inst.conns = append(inst.conns, cs)
		if tlsConfig != nil {
			// Beneath headcase, which reads the decrypted request head.
			ln = tls.NewListener(ln, tlsConfig)
		}
		if s.metaCase {
			ln = headcase.Listen(ln)
		}
		go srv.Serve(ln)
		*s.url = scheme + "://" + ln.Addr().String() + "/" + o.AccountName
	}
	if inst.DirectTableURL == "" {
		inst.DirectTableURL = inst.TableURL
	}
	inst.ConnectionString, _ = inst.ConnectionStringFor(o.AccountName)
	return inst, nil
}

// validAccountName reports whether name is a storage account name: 3 to
// 24 lowercase letters and digits.
func validAccountName(name string) bool {
	if len(name) < 3 || len(name) > 24 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// Stop closes the services' listeners and connections, waiting up to 2 s
// for requests in flight, then the location's databases (Options.Location;
// their error is returned). A connection with no request in flight is
// closed at once, so Stop returns promptly when nothing is in flight. It
// is safe to call more than once.
func (i *Instance) Stop() (err error) {
	i.stopOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		var wg sync.WaitGroup
		for n, s := range i.servers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				i.conns[n].closeQuiet()
				if s.Shutdown(ctx) != nil {
					s.Close()
				}
			}()
		}
		wg.Wait()
		for _, t := range i.tables {
			if cerr := t.Close(); cerr != nil && err == nil {
				err = cerr
			}
		}
		for _, q := range i.queues {
			if cerr := q.Close(); cerr != nil && err == nil {
				err = cerr
			}
		}
		for _, b := range i.blobs {
			if cerr := b.Close(); cerr != nil && err == nil {
				err = cerr
			}
		}
	})
	return err
}

// accountLocation is where account name keeps its data under location
// root (Options.Location): the development account in root itself,
// another in a directory of its name (account names are lowercase
// letters and digits: no name climbs out of root). Empty for memory only.
func accountLocation(root, name string) string {
	if root == "" || name == azrules.DevAccountName {
		return root
	}
	return filepath.Join(root, name)
}

// holdsData reports whether dir holds one of the services' databases.
func holdsData(dir string) bool {
	for _, name := range []string{disk.TablesFile, disk.QueuesFile, disk.BlobsFile} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	return false
}

// ResetLocation empties a location (Options.Location): it removes the
// files the emulator keeps there and in the directories of other accounts
// beneath it, and nothing else, so that the next Start begins with no
// table, queue or blob. It fails, removing nothing, when an emulator holds
// the location.
func ResetLocation(dir string) error {
	dirs := []string{dir}
	if entries, err := os.ReadDir(dir); err == nil {
		for _, e := range entries {
			if e.IsDir() && validAccountName(e.Name()) && holdsData(filepath.Join(dir, e.Name())) {
				dirs = append(dirs, filepath.Join(dir, e.Name()))
			}
		}
	}
	for _, d := range dirs {
		for _, name := range []string{disk.TablesFile, disk.QueuesFile, disk.BlobsFile} {
			if _, err := os.Stat(filepath.Join(d, name)); err != nil {
				continue
			}
			db, err := disk.Open(d, name)
			if err != nil {
				return fmt.Errorf("emulator: reset: %w", err)
			}
			db.Close()
		}
	}
	for _, d := range dirs {
		if err := disk.Reset(d); err != nil {
			return err
		}
	}
	return nil
}

// StartTB starts an emulator for one test (or benchmark) and stops it in
// tb.Cleanup. It fails the test when the emulator cannot start.
func StartTB(tb testing.TB, opts *Options) *Instance {
	tb.Helper()
	inst, err := Start(context.Background(), opts)
	if err != nil {
		tb.Fatalf("emulator: %v", err)
	}
	tb.Cleanup(func() { inst.Stop() })
	return inst
}
