package tablecopy

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/testenv"
)

// A backup interrupted after it cut its key ranges and before its first
// segment (its checkpoint holds the cut and no segment) resumes: its
// entities go to the ranges the checkpoint holds.
func TestBackupResumesACutWithoutSegments(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acct := testenv.Account(t)
	tbl, err := patterns.NewTable[entity.Entity](acct, testenv.TableName(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.CreateIfNotExists(ctx, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tbl.Drop(context.Background(), nil) })
	var es []entity.Entity
	for i := range 300 {
		es = append(es, testenv.EveryType(fmt.Sprintf("p%02d", i%30), fmt.Sprintf("r%04d", i), i))
	}
	if _, err := tbl.BulkWrite(ctx, es, nil); err != nil {
		t.Fatal(err)
	}
	loc := Dir(t.TempDir())
	bounds := []Key{{"p10", ""}, {"p20", "r0005"}}
	ck := backupCheckpoint{Format: checkpointFormat, Version: ManifestVersion, Run: 1,
		Job:    backupJob{Tables: []string{tbl.Name()}, Kind: KindFull, Source: acct.Name() + " " + endpointOnly(acct.TableEndpoint())},
		Tables: []tableStep{{Name: tbl.Name(), Phase: phaseScan, Ranged: true, Bounds: bounds}}}
	body, _ := json.Marshal(ck)
	if err := loc.s.Put(ctx, checkpointName, body); err != nil {
		t.Fatal(err)
	}
	res, err := Backup(ctx, acct, []string{tbl.Name()}, loc, nil)
	if err != nil {
		t.Fatal(err)
	}
	rs := res.Manifest.Tables[0].Ranges
	if !res.Resumed || len(rs) != 3 || rs[1].From != bounds[0] || rs[2].From != bounds[1] || rs[0].Entities+rs[1].Entities+rs[2].Entities != int64(len(es)) {
		t.Fatalf("resumed %v, ranges %+v; want the checkpoint's 3 ranges holding %d entities", res.Resumed, rs, len(es))
	}
	checks, err := VerifyBackup(ctx, loc, &VerifyOptions{Account: acct})
	if err != nil || !checks[0].OK() || checks[0].Ranges != 3 {
		t.Fatalf("verify: %+v %v", checks, err)
	}
}
