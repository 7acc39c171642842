package emulator_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/emulator"
	"github.com/tablekit/tablekit/emulator/internal/replay"
	"github.com/tablekit/tablekit/integration/azurite"
	"github.com/tablekit/tablekit/tools/testenv"
)

// recordings are the sessions the Azure SDKs recorded against real Azure
// Storage, trimmed (testdata/recordings/README.md says from where).
func recordings(t *testing.T) []*replay.Recording {
	t.Helper()
	recs, err := replay.Load(os.DirFS("testdata/recordings"))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) == 0 {
		t.Fatal("no recordings in testdata/recordings")
	}
	return recs
}

// TestReplay replays every recording against its own emulator and
// requires Azure's answers: the same statuses, error codes, messages and
// bodies, service-chosen values (ETags, Timestamps, request ids,
// continuation tokens) of Azure's form. A difference must be one of
// emulatorDiffers (docs/EMULATOR.md lists each with its evidence), and
// each of those must still be seen. It logs, per directory of
// recordings (an SDK's) and per service, the exchanges that match.
func TestReplay(t *testing.T) {
	t.Parallel() // 0.7 to 1.3 s of CPU, beside the tests that wait
	recs := recordings(t)
	seen := make([]int, len(emulatorDiffers))
	type tally struct{ recordings, exchanges, exact, listed int }
	tallies := map[string]*tally{}
	var keys []string
	for _, rec := range recs {
		t.Run(rec.Name, func(t *testing.T) {
			em := emulator.StartTB(t, &emulator.Options{Cosmos: strings.HasSuffix(rec.Name, "_cosmos")})
			res := replayAgainst(t, &replay.Target{
				TableURL: em.TableURL, QueueURL: em.QueueURL, BlobURL: em.BlobURL,
				AccountName: em.AccountName, AccountKey: em.AccountKey,
				Now: em.Now, Advance: em.Advance,
			}, rec)
			dir, _, _ := strings.Cut(rec.Name, "/")
			counted := map[string]bool{}
			unlisted := 0
			for _, x := range res.Exchanges {
				key := dir + " " + x.Service
				tl := tallies[key]
				if tl == nil {
					tl = &tally{}
					tallies[key] = tl
					keys = append(keys, key)
				}
				if !counted[key] {
					counted[key] = true
					tl.recordings++
				}
				tl.exchanges++
				if len(x.Diffs) == 0 {
					tl.exact++
					continue
				}
				listed := true
				for _, d := range x.Diffs {
					i := knownEmulator(fmt.Sprintf("%s#%d", rec.Name, x.Index), d)
					if i < 0 {
						listed = false
						unlisted++
						t.Errorf("#%d %s %s: %s: not one of the emulator's known differences", x.Index, x.Method, x.URI, d)
						continue
					}
					seen[i]++
				}
				if listed {
					tl.listed++
				}
			}
			if unlisted > 0 {
				t.Logf("source: %s", rec.Source)
			}
		})
	}
	for i, known := range emulatorDiffers {
		if seen[i] == 0 {
			t.Errorf("the emulator no longer differs from Azure thus (remove it from emulatorDiffers and docs/EMULATOR.md): %s", known.what)
			continue
		}
		t.Logf("%4d x %s", seen[i], known.what)
	}
	sort.Strings(keys)
	var all tally
	for _, k := range keys {
		tl := tallies[k]
		t.Logf("%-28s %3d recordings, %4d exchanges: %4d match, %4d more but for listed differences", k, tl.recordings, tl.exchanges, tl.exact, tl.listed)
		all.exchanges += tl.exchanges
		all.exact += tl.exact
		all.listed += tl.listed
	}
	t.Logf("emulator: %d of %d exchanges match Azure's, %d more but for listed differences, over %d recordings", all.exact, all.exchanges, all.listed, len(recs))
}

// knownEmulator is the index in emulatorDiffers of the difference d in
// the exchange at ("RECORDING#INDEX"), or -1.
func knownEmulator(at, d string) int {
	for i, known := range emulatorDiffers {
		if known.in.MatchString(at) && known.match(d) {
			return i
		}
	}
	return -1
}

// emulatorDiffers are the ways the emulator answers recorded sessions
// differently from Azure, each matched on the recording's name and the
// text of the replay's difference, each a row of docs/EMULATOR.md's
// known differences with its evidence and why it is left.
var emulatorDiffers = []struct {
	what  string
	in    *regexp.Regexp // the exchanges it is seen in: RECORDING#INDEX
	match func(diff string) bool
}{
	// Answers of the 2019 account that no published version documents.
	{"x-ms-tag-count: 0 on Get Blob and Get Blob Properties at x-ms-version 2018-11-09 and 2019-02-02 (index tags came with 2019-12-12)",
		pyStorage, re(`^header x-ms-tag-count: recorded "0", got none$`)},
	{"TagCount in a blob listing at x-ms-version 2018-11-09 (index tags came with 2019-12-12)",
		pyStorage, re(`^body EnumerationResults/Blobs/Blob/Properties: recorded element TagCount, got none$`)},
	{"x-ms-access-tier: Hot and x-ms-access-tier-inferred: true on an append blob's properties (tiers are block blobs')",
		pyStorage, re(`^header x-ms-access-tier(-inferred)?: recorded "(Hot|true)", got none$`)},
	// Elements and headers of later versions, sent at every version.
	{"Content-CRC64 in a blob listing at x-ms-version 2018-11-09 (it came with 2019-02-02)",
		pyStorage, re(`^body EnumerationResults/Blobs/Blob/Properties: element Content-CRC64 not recorded$`)},
	{"RehydratePriority in a blob listing at x-ms-version 2018-11-09 (it came with 2019-12-12)",
		pyStorage, re(`^body EnumerationResults/Blobs/Blob/Properties: element RehydratePriority not recorded$`)},
	{"DefaultEncryptionScope, DenyEncryptionScopeOverride, ImmutableStorageWithVersioningEnabled in a container listing at x-ms-version 2018-11-09 (they came with 2019-07-07 and 2020-10-02)",
		pyStorage, re(`^body EnumerationResults/Containers/Container/Properties: element (DefaultEncryptionScope|DenyEncryptionScopeOverride|ImmutableStorageWithVersioningEnabled) not recorded$`)},
	// Listings.
	{"a snapshot in a blob listing carries AccessTier, AccessTierInferred, LeaseStatus and LeaseState",
		pyStorage, re(`^body EnumerationResults/Blobs/Blob/Properties: element (AccessTier|AccessTierInferred|LeaseStatus|LeaseState) not recorded$`)},
	{"a blob's metadata in a listing by name, where Azure lists it in the order it was set",
		pyStorage, re(`^body EnumerationResults/Blobs/Blob/Metadata: recorded children in the order \[number name\], got \[name number\]$`)},
	// Blocks, appends, leases, tiers.
	{"Append Block with If-Match 0x111111111111111 (unquoted) is 412 ConditionNotMet, where Azure answered 400 OutOfRangeInput",
		regexp.MustCompile(`^python-storage/test_blob_access_conditions\.test_append_block_with_if_match_fail#2$`), re(`.`)},
	{"no x-ms-delete-type-permanent: true on deleting a snapshot (the recording account had soft delete on)",
		pyStorage, re(`^header x-ms-delete-type-permanent: recorded "true", got none$`)},
	{"Get Account Information's HEAD answer has no Content-Length: 0",
		pyStorage, re(`^header Content-Length: recorded "0", got ""$`)},
	// Access policies and service properties.
	{"an XML error names no LineNumber, LinePosition and Reason",
		pyStorage, re(`^body Error: recorded element (LineNumber|LinePosition|Reason), got none$`)},
	{"a retention policy of more than 365 days is taken (202)",
		regexp.MustCompile(`^python-storage/test_service_properties\.test_retention_too_long#0$`), re(`.`)},
	{"service properties read back as the client wrote them: Logging's elements in its order, booleans as it spelled them (False)",
		pyStorage, re(`^body StorageServiceProperties/Logging: recorded children in the order \[Version Read Write Delete RetentionPolicy\], got \[Version Delete Read Write RetentionPolicy\]$|^body StorageServiceProperties/[A-Za-z/]+/Enabled: recorded "false", got "False"$`)},
	// Tables (x-ms-version 2017-04-17).
}

// The directories of recordings differences are seen in.
var (
	pyStorage = regexp.MustCompile(`^python-storage/`)
	pyTables  = regexp.MustCompile(`^python-cosmostable/`)
)

// replayAgainst runs one recording, bounded in time.
func replayAgainst(t *testing.T, target *replay.Target, rec *replay.Recording) *replay.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := replay.Run(ctx, target, rec)
	if err != nil {
		t.Fatalf("replaying %s: %v", rec.Name, err)
	}
	return res
}

// azuriteDiffers are the ways Azurite (3.37.0, strict) answers the
// recorded sessions differently from Azure, each matched on the text of
// the replay's difference. They are Azurite's departures, not the
// replay's: the emulator answers these exchanges as Azure did.
var azuriteDiffers = []struct {
	what  string
	match func(diff string) bool
}{
	{"answers its own API version in x-ms-version, not the request's",
		re(`^header x-ms-version: recorded "[0-9-]+", got "[0-9-]+"$`)},
	{"a Blob service error carries no x-ms-version",
		re(`^header x-ms-version: recorded "[0-9-]+", got none$`)},
	{"a JSON answer's Content-Type lacks streaming=true (and, outside a batch, charset=utf-8)",
		re(`header Content-Type: recorded "application/json; ?odata=(?:minimal|full)metadata; ?streaming=true; ?charset=utf-8", got "application/json;odata=(?:minimal|full)metadata(;charset=utf-8)?"$`)},
	{"a DateTime property is returned as the client wrote it, trailing zeros of its fraction kept (Azure drops them)", paddedDateTime},
	{"no Location header on a created table or entity",
		re(`^header Location: recorded "[^"]+", got none$`)},
	{"a query's odata.metadata names #Tables/@Element, not the table",
		re(`^body\.odata\.metadata: want "[^"]+\$metadata#[A-Za-z0-9]+" \(recorded "[^"]+"\), got "[^"]+\$metadata#Tables/@Element"$`)},
	{"an error message's Time has milliseconds, not Azure's 7 fractional digits",
		re(`message\.value: recorded "[^"]*\\nTime:[0-9T:.-]+\.[0-9]{7}Z", got "[^"]*\\nTime:[0-9T:.-]+\.[0-9]{3}Z"$|Error/Message: recorded "[^"]*\\nTime:[0-9T:.-]+\.[0-9]{7}Z", got "[^"]*\\nTime:[0-9T:.-]+\.[0-9]{3}Z"$`)},
	{"continuation tokens are the key in base64, not Azure's 1!length!base64 form",
		re(`^header x-ms-continuation-Next(PartitionKey|RowKey|TableName): recorded "[^"]+", got "[A-Za-z0-9+/=]+", not of its form$`)},
	{"a batch operation's answer lacks Preference-Applied: return-no-content",
		re(`^body operation [0-9]+: header Preference-Applied: recorded "return-no-content", got none$`)},
	{"a batch operation's answer says DataServiceVersion 3.0 where Azure says 1.0 (update, merge, delete)",
		re(`^body operation [0-9]+: header Dataserviceversion: recorded "1\.0;", got "3\.0;"$`)},
	{"sends x-ms-error-code on a Table service error, where Azure (2019-02-02) gives the code only in the body",
		re(`^header x-ms-error-code: recorded none, got "[A-Za-z]+"$`)},
	{"answers no x-ms-content-crc64 to Put Blob",
		re(`^header x-ms-content-crc64: recorded "[A-Za-z0-9+/=]+", got none$`)},
	{"answers a range that starts at the blob's end with 206 and an empty body (Content-Range bytes 15-14/15), not 416 InvalidRange",
		re(`^status: recorded 416, got 206$|^header Content-Range: recorded "bytes \*/([0-9]+)", got "bytes ([0-9]+)-[0-9]+/[0-9]+"$|^header Content-Type: recorded "application/xml", got "application/octet-stream"$|^header x-ms-error-code: recorded "InvalidRange", got none$|^body: recorded XML, got "": no element$`)},
	{"a batch operation's Location and DataServiceId drop the table name's last character", truncatedName},
	{"no DataServiceId header on a created table",
		re(`^header DataServiceId: recorded "[^"]+", got none$`)},
	{"an access policy's date-only Start or Expiry reads back as written, not as Azure's full DateTime",
		re(`^body SignedIdentifiers/SignedIdentifier/AccessPolicy/(?:Start|Expiry): recorded "(\d{4}-\d\d-\d\d)T00:00:00\.0000000Z", got "\d{4}-\d\d-\d\d"$`)},
	// Page blobs (azblob's recordings of Azure answering them).
	{"answers a Put Page range off the page boundaries 416 with the code \"Requested Range Not Satisfiable\", not 400 InvalidHeaderValue naming Range",
		re(`^status: recorded 400, got 416$|^header x-ms-error-code: recorded "InvalidHeaderValue", got "Requested Range Not Satisfiable"$`)},
	{"refuses a page blob size off the page boundaries (create, resize) and an unknown x-ms-sequence-number-action as 400 InvalidOperation, without HeaderName and HeaderValue",
		re(`^header x-ms-error-code: recorded "InvalidHeaderValue", got "InvalidOperation"$|^body Error: recorded element Header(Name|Value), got none$`)},
	{"creates a page blob with x-ms-blob-sequence-number: -1 (201, not 400 InvalidHeaderValue)",
		re(`^status: recorded 400, got 201$|^header x-ms-error-code: recorded "InvalidHeaderValue", got none$|^header Content-Type: recorded "application/xml", got none$`)},
	{"answers Get Page Ranges with a range it cannot read (bytes=-2-497) 500, where Azure lists the whole blob's",
		re(`^status: recorded 200, got 500$|^header (?:ETag|Last-Modified|x-ms-blob-content-length): recorded ".*", got none$`)},
	{"takes x-ms-if-sequence-number-le: -1 as a condition not met (412 SequenceNumberConditionNotMet), not 400 InvalidInput",
		re(`^status: recorded 400, got 412$|^header x-ms-error-code: recorded "InvalidInput", got "SequenceNumberConditionNotMet"$|^body Error/Code: recorded "InvalidInput", got "SequenceNumberConditionNotMet"$`)},
	{"ends a page range at the byte Get Page Ranges' range ends, where Azure ends it at the page's end (bytes=0-1022 lists 0-1023)",
		pageEndCut},
}

// re matches a difference with a regular expression.
func re(pattern string) func(string) bool { return regexp.MustCompile(pattern).MatchString }

// batchURL is a batch operation's Location or DataServiceId difference.
var batchURL = regexp.MustCompile(`^body operation [0-9]+: header (?:Location|Dataserviceid): want "[^"]*/([A-Za-z0-9]+)(\([^)]*\))" \(recorded "[^"]+"\), got "[^"]*/([A-Za-z0-9]+)(\([^)]*\))"$`)

// truncatedName matches a batch operation's URL whose table name is the
// wanted one without its last character, and nothing else different.
func truncatedName(d string) bool {
	m := batchURL.FindStringSubmatch(d)
	return m != nil && len(m[1]) > 1 && m[3] == m[1][:len(m[1])-1] && m[4] == m[2]
}

// dateTimeDiff is a body value's difference whose texts are DateTimes.
var dateTimeDiff = regexp.MustCompile(`^body\.[^:]+: recorded "(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d*)?Z)", got "(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d*Z)"$`)

// paddedDateTime matches a DateTime got with trailing zeros in its
// fraction where the recording has none, and nothing else different.
func paddedDateTime(d string) bool {
	m := dateTimeDiff.FindStringSubmatch(d)
	if m == nil || m[1] == m[2] {
		return false
	}
	trimmed := strings.TrimSuffix(strings.TrimRight(strings.TrimSuffix(m[2], "Z"), "0"), ".") + "Z"
	return trimmed == m[1]
}

// knownAzurite is the index in azuriteDiffers of the difference d, or -1.
func knownAzurite(d string) int {
	for i, known := range azuriteDiffers {
		if known.match(d) {
			return i
		}
	}
	return -1
}

// azuriteDirs are the directories of recordings TestReplayAzurite
// replays: the ones azuriteDiffers was drawn from. The tier of other SDKs'
// recordings (python-storage, python-cosmostable, net-*) holds the
// emulator to Azure; holding Azurite to it is another list's work.
var azuriteDirs = map[string]bool{"aztables": true, "aztables-2021": true, "azqueue": true, "azblob": true, "aztables-python": true}

// TestReplayAzurite replays the Azure Table, Queue and Blob storage
// recordings of azuriteDirs against Azurite (strict), one instance for all of them: the
// replay on a service that is not the emulator. Every difference must be
// one of azuriteDiffers, and every one of those must still be seen, so the
// list stays the evidence of how Azurite departs from Azure.
func TestReplayAzurite(t *testing.T) {
	t.Parallel()
	testenv.Tier(t, testenv.TierAzurite)
	recs := recordings(t)
	az := azurite.StartTB(t, &azurite.Options{Strict: true})
	seen := make([]int, len(azuriteDiffers))
	var matched, butVersion, total int
	for _, rec := range recs {
		if strings.HasSuffix(rec.Name, "_cosmos") {
			continue // Azurite emulates Azure Table storage only
		}
		if dir, _, _ := strings.Cut(rec.Name, "/"); !azuriteDirs[dir] {
			continue
		}
		t.Run(rec.Name, func(t *testing.T) {
			res := replayAgainst(t, &replay.Target{
				TableURL: az.TableURL, QueueURL: az.QueueURL, BlobURL: az.BlobURL,
				AccountName: azurite.AccountName, AccountKey: azurite.AccountKey,
			}, rec)
			// A recording that ends without deleting its tables would
			// show them in the next one's table lists.
			dropAllTables(t, az.ConnectionString)
			matched += res.Matched()
			total += len(res.Exchanges)
			for _, x := range res.Exchanges {
				onlyVersion := true
				for _, d := range x.Diffs {
					i := knownAzurite(d)
					onlyVersion = onlyVersion && i == 0
					if i >= 0 {
						seen[i]++
						continue
					}
					t.Errorf("#%d %s %s: %s: not one of Azurite's known differences", x.Index, x.Method, x.URI, d)
				}
				if onlyVersion {
					butVersion++
				}
			}
		})
	}
	for i, known := range azuriteDiffers {
		if seen[i] == 0 {
			t.Errorf("Azurite no longer differs from Azure thus: %s", known.what)
			continue
		}
		t.Logf("%3d x Azurite %s", seen[i], known.what)
	}
	t.Logf("azurite: %d of %d exchanges match Azure's; %d apart from x-ms-version", matched, total, butVersion)
}

// dropAllTables deletes every table of the account of connStr.
func dropAllTables(t *testing.T, connStr string) {
	t.Helper()
	acct, err := tablekit.Connect(connStr, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pager := acct.Tables().NewListTablesPager(nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatalf("list tables: %v", err)
		}
		for _, tb := range page.Tables {
			if _, err := acct.Tables().DeleteTable(ctx, *tb.Name, nil); err != nil {
				t.Fatalf("delete table %s: %v", *tb.Name, err)
			}
		}
	}
}
