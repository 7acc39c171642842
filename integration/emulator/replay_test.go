package emulator_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/integration/azurite"
	"github.com/tablekit/tablekit/integration/emulator"
	"github.com/tablekit/tablekit/integration/emulator/internal/replay"
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
// continuation tokens) of Azure's form.
func TestReplay(t *testing.T) {
	recs := recordings(t)
	var matched, total int
	for _, rec := range recs {
		t.Run(rec.Name, func(t *testing.T) {
			em := emulator.StartTB(t, &emulator.Options{Cosmos: strings.HasSuffix(rec.Name, "_cosmos")})
			res := replayAgainst(t, &replay.Target{
				TableURL: em.TableURL, QueueURL: em.QueueURL, BlobURL: em.BlobURL,
				AccountName: em.AccountName, AccountKey: em.AccountKey,
			}, rec)
			matched += res.Matched()
			total += len(res.Exchanges)
			if res.Matched() != len(res.Exchanges) {
				t.Errorf("%s\nsource: %s", res, rec.Source)
			} else {
				t.Logf("%d of %d exchanges match", res.Matched(), len(res.Exchanges))
			}
		})
	}
	t.Logf("emulator: %d of %d exchanges match Azure's, over %d recordings", matched, total, len(recs))
}

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

// TestReplayAzurite replays every recording against Azurite (strict),
// one instance for all of them, to measure the replay itself on a service
// that is not the emulator.
func TestReplayAzurite(t *testing.T) {
	recs := recordings(t)
	az := azurite.StartTB(t, &azurite.Options{Strict: true})
	var matched, total int
	for _, rec := range recs {
		if strings.HasSuffix(rec.Name, "_cosmos") {
			continue
		}
		t.Run(rec.Name, func(t *testing.T) {
			res := replayAgainst(t, &replay.Target{
				TableURL: az.TableURL, QueueURL: az.QueueURL, BlobURL: az.BlobURL,
				AccountName: azurite.AccountName, AccountKey: azurite.AccountKey,
			}, rec)
			matched += res.Matched()
			total += len(res.Exchanges)
			t.Logf("%s", res)
		})
	}
	t.Logf("azurite: %d of %d exchanges match Azure's", matched, total)
}
