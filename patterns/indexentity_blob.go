package patterns

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"iter"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/tkerr"
	"github.com/tablekit/tablekit/internal/wire"
	"github.com/tablekit/tablekit/keys"
)

// BlobIndexedTable is the guide's index entities pattern, option 1: a blob
// per value holding the PartitionKey and RowKey of every entity with that
// value, for lists too long for an entity and for lookups across
// partitions ("all the employees named Jones, in every department").
//
// The blob is updated with ETag conditions (If-Match, or If-None-Match: *
// to create it), retrying when another writer got there first, so
// concurrent writers never lose each other's members. Entity and blob
// cannot change atomically; the order keeps the blob a superset of the
// truth: a member is added before the entity is written and removed after,
// and Find re-checks each entity's value, so a crash in between leaves
// at most a stale member that Find skips (and Rebuild removes).
//
// Blob names are Table + "/" + Name + "/" + value in the container.
//
// Requests: Insert 3 (read blob, write blob, insert); Update 2, or 6 when
// the value changes; Delete 4; Find 1 + one read per member, in
// parallel.
type BlobIndexedTable[T any] struct {
	t         *Table[T]
	ix        ListIndex[T]
	container string
	blobs     *azblob.Client
}

// Member is the keys of one entity listed in an index (a blob index or
// option 3's index entities, whose lists span partitions).
type Member struct {
	PartitionKey string `json:"pk"`
	RowKey       string `json:"rk"`
}

// NewBlobIndexedTable returns the repository of table name whose index ix
// lives in blobs of container. It makes no request; CreateIfNotExists
// creates the table and the container.
func NewBlobIndexedTable[T any](acct *tablekit.Account, name, container string, ix ListIndex[T], opts *BlobIndexedTableOptions) (*BlobIndexedTable[T], error) {
	o := optsOf(opts)
	t, what, err := openTable[T](acct, name, o.Table, "NewBlobIndexedTable")
	if err != nil {
		return nil, err
	}
	if err := validateListIndex(what, t, &ix); err != nil {
		return nil, err
	}
	if err := keys.ValidateContainerName(container); err != nil {
		return nil, tkerr.Errorf("tablekit: %s: %w", what, err)
	}
	if acct.Blobs() == nil {
		return nil, tkerr.Errorf("tablekit: %s: %w", what, tablekit.ErrNoEndpoint)
	}
	return &BlobIndexedTable[T]{t: t, ix: ix, container: container, blobs: acct.Blobs()}, nil
}

// Table is the underlying typed table.
func (x *BlobIndexedTable[T]) Table() *Table[T] { return x.t }

// CreateIfNotExists creates the table and the blob container; existing
// ones are not an error. Two requests.
func (x *BlobIndexedTable[T]) CreateIfNotExists(ctx context.Context, opts *CreateOptions) error {
	if err := x.t.CreateIfNotExists(ctx, opts); err != nil {
		return err
	}
	_, err := x.blobs.CreateContainer(ctx, x.container, nil)
	err = tablekit.MapError(err, "create container", x.container)
	if err != nil && !errors.Is(err, tablekit.ErrAlreadyExists) {
		return err
	}
	return nil
}

// BlobName is the name of value's blob.
func (x *BlobIndexedTable[T]) BlobName(value string) string {
	return x.t.name + "/" + x.ix.Name + "/" + value
}

func (x *BlobIndexedTable[T]) read(ctx context.Context, value string) ([]Member, azcore.ETag, error) {
	name := x.BlobName(value)
	resp, err := x.blobs.DownloadStream(ctx, x.container, name, nil)
	if err != nil {
		err = tablekit.MapError(err, "read index blob", x.container+"/"+name)
		var se *tablekit.ServiceError
		if errors.As(err, &se) && se.Code == "BlobNotFound" {
			return nil, "", nil
		}
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", err
	}
	var m []Member
	if len(b) > 0 {
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, "", tkerr.Errorf("tablekit: index blob %s/%s: %w", x.container, name, err)
		}
	}
	return m, *resp.ETag, nil
}

func cmpMember(a, b Member) int {
	if a.PartitionKey != b.PartitionKey {
		return strings.Compare(a.PartitionKey, b.PartitionKey)
	}
	return strings.Compare(a.RowKey, b.RowKey)
}

// change adds (add true) or removes m from value's blob with an ETag-
// conditioned write, retrying on a concurrent change. Two requests per
// attempt; one when nothing changes.
func (x *BlobIndexedTable[T]) change(ctx context.Context, value string, m Member, add bool) error {
	if add {
		return x.changeMany(ctx, value, []Member{m}, nil)
	}
	return x.changeMany(ctx, value, nil, []Member{m})
}

// changeMany adds the members add and removes the members remove from
// value's blob in one ETag-conditioned write, retrying on a concurrent
// change. Two requests per attempt; one when nothing changes.
func (x *BlobIndexedTable[T]) changeMany(ctx context.Context, value string, add, remove []Member) error {
	name := x.BlobName(value)
	var lastErr error
	for attempt := 0; attempt < x.t.maxAttempts; attempt++ {
		list, etag, err := x.read(ctx, value)
		if err != nil {
			return err
		}
		changed := false
		for _, m := range add {
			if i, found := slices.BinarySearchFunc(list, m, cmpMember); !found {
				list, changed = slices.Insert(list, i, m), true
			}
		}
		for _, m := range remove {
			if i, found := slices.BinarySearchFunc(list, m, cmpMember); found {
				list, changed = slices.Delete(list, i, i+1), true
			}
		}
		if !changed {
			return nil
		}
		body, _ := json.Marshal(list) // strings only
		cond := &blob.ModifiedAccessConditions{}
		if etag == "" {
			cond.IfNoneMatch = to.Ptr(azcore.ETagAny)
		} else {
			cond.IfMatch = &etag
		}
		_, err = x.blobs.UploadBuffer(ctx, x.container, name, body, &azblob.UploadBufferOptions{
			AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: cond},
			HTTPHeaders:      &blob.HTTPHeaders{BlobContentType: to.Ptr("application/json")},
		})
		err = tablekit.MapError(err, "write index blob", x.container+"/"+name)
		if err == nil {
			return nil
		}
		if !errors.Is(err, tablekit.ErrPreconditionFailed) && !errors.Is(err, tablekit.ErrAlreadyExists) && !errors.Is(err, tablekit.ErrConflict) {
			return err
		}
		lastErr = err
		if err := wire.ConflictPause(ctx, attempt); err != nil {
			return err
		}
	}
	return tkerr.Errorf("tablekit: index blob %s/%s: gave up after %d attempts, it kept changing: %w", x.container, name, x.t.maxAttempts, lastErr)
}

// Insert lists v under its value, then inserts it. Errors:
// tablekit.ErrAlreadyExists (v's keys exist). Three requests.
func (x *BlobIndexedTable[T]) Insert(ctx context.Context, v *T, opts *InsertOptions) error {
	if _, _, _, err := x.t.marshal(v); err != nil {
		return err
	}
	pk, rk := x.t.codec.Keys(v)
	if val := x.ix.Key(v); val != "" {
		if err := x.change(ctx, val, Member{pk, rk}, true); err != nil {
			return err
		}
	}
	return x.t.Insert(ctx, v, opts)
}

// Update reads the entity, calls fn on it and replaces it conditionally
// on the ETag read (Table.Update); when the value changes, the entity is
// listed under the new value before the write and removed from the old
// one after it.
func (x *BlobIndexedTable[T]) Update(ctx context.Context, pk, rk string, fn func(*T) error, opts *UpdateOptions) (T, error) {
	var oldVal string
	var added []string
	v, err := x.t.Update(ctx, pk, rk, func(v *T) error {
		old := x.ix.Key(v)
		if err := fn(v); err != nil {
			return err
		}
		oldVal = old
		if nv := x.ix.Key(v); nv != old && nv != "" && !slices.Contains(added, nv) {
			if err := x.change(ctx, nv, Member{pk, rk}, true); err != nil {
				return err
			}
			added = append(added, nv)
		}
		return nil
	}, opts)
	if err != nil {
		return v, err
	}
	if oldVal != "" && x.ix.Key(&v) != oldVal {
		if err := x.change(ctx, oldVal, Member{pk, rk}, false); err != nil {
			return v, tkerr.Errorf("tablekit: updated %s but could not unlist it from %q (Find skips it; Rebuild removes it): %w", x.t.describe(pk, rk), oldVal, err)
		}
	}
	return v, nil
}

// Delete deletes the entity with v's keys (conditional on v's ETag
// unless opts say otherwise, as Table.Delete; the ETag it reads), then
// unlists it. Four requests.
func (x *BlobIndexedTable[T]) Delete(ctx context.Context, v *T, opts *WriteOptions) error {
	old, etag, err := x.t.readForDelete(ctx, v, opts)
	if err != nil {
		return err
	}
	if err := x.t.Delete(ctx, &old, &WriteOptions{ETag: etag}); err != nil {
		return err
	}
	pk, rk := x.t.codec.Keys(&old)
	if val := x.ix.Key(&old); val != "" {
		if err := x.change(ctx, val, Member{pk, rk}, false); err != nil {
			return tkerr.Errorf("tablekit: deleted %s but could not unlist it (Find skips it): %w", x.t.describe(pk, rk), err)
		}
	}
	return nil
}

// Members returns the keys of the entities listed under value, in every
// partition (one request; none listed is an empty list, not an error).
func (x *BlobIndexedTable[T]) Members(ctx context.Context, value string, opts *GetOptions) ([]Member, error) {
	m, _, err := x.read(ctx, value)
	return m, err
}

// Find returns the entities whose value is value, in every partition:
// one request for the blob, then one read per member in parallel up to
// ListIndex.Parallelism. Members whose entity is gone or has another value
// (a write that crashed half way) are skipped.
func (x *BlobIndexedTable[T]) Find(ctx context.Context, value string, opts *QueryOptions) iter.Seq2[T, error] {
	return lookupMembers(ctx, x.t, x.ix, value, x.Members, opts)
}

// Get reads the entity (pk, rk): a point query, one request;
// tablekit.ErrNotFound when there is none.
func (x *BlobIndexedTable[T]) Get(ctx context.Context, pk, rk string, opts *GetOptions) (T, error) {
	return x.t.Get(ctx, pk, rk, opts)
}
