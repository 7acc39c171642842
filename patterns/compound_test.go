package patterns_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/tablekit/tablekit/patterns"
)

// CompoundRow is a row of the guide's compound key table: employees
// ("empid_000123") and their yearly reviews ("empid_000123_2012") side by
// side in the department's partition. The guide's property names
// "Manager Rating" and "Peer Rating" contain spaces, which Azure refuses
// (property names are C# identifiers): ManagerRating and PeerRating are
// the nearest valid names.
type CompoundRow struct {
	PartitionKey  string
	RowKey        string
	FirstName     string
	LastName      string
	ManagerRating int
	PeerRating    int
	Comments      string
}

// compoundReviewKey is what the RowKey template reads.
type compoundReviewKey struct {
	ID   int
	Year int
}

func TestCompoundKeysGuideEmployeeReviews(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tbl, c := newTable[CompoundRow](t)
	ck, err := patterns.NewCompoundKeys[compoundReviewKey, CompoundRow](tbl.Account(), tbl.Name(), "empid_{ID:6}_{Year}", nil)
	if err != nil {
		t.Fatal(err)
	}
	rk, err := ck.RowKey(compoundReviewKey{ID: 123, Year: 2012})
	if err != nil || rk != "empid_000123_2012" {
		t.Fatalf("RowKey = %q, %v; want empid_000123_2012", rk, err)
	}
	if k, err := ck.Parse(rk); err != nil || k != (compoundReviewKey{123, 2012}) {
		t.Errorf("Parse(%q) = %+v, %v", rk, k, err)
	}
	// The employee and its reviews in one EGT (same partition), plus the
	// next employee's reviews that the query must leave out.
	tx := tbl.Transaction().Insert(&CompoundRow{PartitionKey: "Sales", RowKey: "empid_000123", FirstName: "Jun", LastName: "Cao"})
	for y := 2010; y <= 2013; y++ {
		rk, _ := ck.RowKey(compoundReviewKey{123, y})
		tx.Insert(&CompoundRow{PartitionKey: "Sales", RowKey: rk, ManagerRating: y - 2008, PeerRating: y - 2007, Comments: fmt.Sprint("review ", y)})
	}
	for y := 2010; y <= 2011; y++ {
		rk, _ := ck.RowKey(compoundReviewKey{124, y})
		tx.Insert(&CompoundRow{PartitionKey: "Sales", RowKey: rk, ManagerRating: 1, Comments: "someone else"})
	}
	if _, err := tx.Submit(ctx, nil); err != nil {
		t.Fatal(err)
	}
	c.Reset()

	// The guide's point query for one year's review.
	r, err := ck.Get(ctx, "Sales", compoundReviewKey{123, 2012}, nil)
	if err != nil || r.Comments != "review 2012" {
		t.Fatalf("Get = %+v, %v", r, err)
	}
	requests(t, c, 1, "Get of one review")

	// The guide's related-set query with its projection
	// ($select=RowKey,Manager Rating,Peer Rating,Comments): one request.
	sel := &patterns.QueryOptions{Select: []string{"RowKey", "ManagerRating", "PeerRating", "Comments"}}
	reviews, err := patterns.Collect(ck.Related(ctx, "Sales", compoundReviewKey{ID: 123}, 2, &patterns.RelatedOptions{Query: sel}))
	if err != nil {
		t.Fatal(err)
	}
	requests(t, c, 1, "the related set")
	var got []string
	for _, r := range reviews {
		got = append(got, fmt.Sprintf("%s:%d/%d:%s", r.RowKey, r.ManagerRating, r.PeerRating, r.Comments))
		if r.PartitionKey != "" || r.FirstName != "" {
			t.Errorf("projection returned unselected properties: %+v", r)
		}
	}
	want := "[empid_000123_2010:2/3:review 2010 empid_000123_2011:3/4:review 2011 empid_000123_2012:4/5:review 2012 empid_000123_2013:5/6:review 2013]"
	if fmt.Sprint(got) != want {
		t.Errorf("related set = %v\nwant %s", got, want)
	}

	// With the parent, as the guide's bounds ('empid_000123' ..) include it.
	withParent, err := patterns.Collect(ck.Related(ctx, "Sales", compoundReviewKey{ID: 123}, 2, &patterns.RelatedOptions{IncludeParent: true}))
	if err != nil {
		t.Fatal(err)
	}
	requests(t, c, 1, "the related set with its parent")
	if len(withParent) != 5 || withParent[0].RowKey != "empid_000123" || withParent[0].FirstName != "Jun" {
		t.Errorf("with parent: %d rows, first %+v", len(withParent), withParent[0])
	}
	f, err := ck.RelatedFilter("Sales", compoundReviewKey{ID: 123}, 2, true)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := f.Build(); s != "(PartitionKey eq 'Sales') and (RowKey ge 'empid_000123') and (RowKey lt 'empid_000123`')" {
		t.Errorf("filter = %s", s)
	}
}
