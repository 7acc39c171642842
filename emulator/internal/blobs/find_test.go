package blobs_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"

	"github.com/tablekit/tablekit/emulator/internal/blobs"
	"github.com/tablekit/tablekit/integration/azurite"
)

// found renders a Find Blobs by Tags page as "container/blob{k=v,...}"
// items, in the order answered.
func found(items []*service.FilterBlobItem) []string {
	out := []string{}
	for _, it := range items {
		var tags []string
		if it.Tags != nil {
			for _, t := range it.Tags.BlobTagSet {
				tags = append(tags, *t.Key+"="+*t.Value)
			}
		}
		out = append(out, *it.ContainerName+"/"+*it.Name+"{"+strings.Join(tags, ",")+"}")
	}
	return out
}

// tagged uploads a block blob with tags.
func tagged(t *testing.T, cl *azblob.Client, c, name string, tags map[string]string) {
	t.Helper()
	_, err := cl.UploadBuffer(context.Background(), c, name, []byte("data"), &azblob.UploadBufferOptions{Tags: tags})
	if err != nil {
		t.Fatalf("upload %s/%s: %v", c, name, err)
	}
}

// TestFindBlobsByTags: Find Blobs by Tags on the account and on a
// container answers the blobs whose tags meet the expression, ordered by
// container and then name as a real account orders them, each with its
// tags of the keys the expression compares (and no others); @container
// scopes an account's search; ranges compare as strings; snapshots and
// untagged blobs are not found; maxresults pages with Marker and
// NextMarker; a change of tags or a delete shows at once.
func TestFindBlobsByTags(t *testing.T) {
	ctx := context.Background()
	cl := emulatorClient(t)
	svc := cl.ServiceClient()
	for _, c := range []string{"gamma", "alpha", "beta"} {
		must[azblob.CreateContainerResponse](t, "create")(cl.CreateContainer(ctx, c, nil))
	}
	tagged(t, cl, "alpha", "z", map[string]string{"project": "x", "stage": "raw", "other": "1"})
	tagged(t, cl, "beta", "b", map[string]string{"project": "y"})
	tagged(t, cl, "beta", "a", map[string]string{"project": "x", "stage": "done"})
	tagged(t, cl, "gamma", "c", map[string]string{"project": "x"})
	tagged(t, cl, "gamma", "untagged", nil)
	must[blob.CreateSnapshotResponse](t, "snapshot")(svc.NewContainerClient("alpha").NewBlobClient("z").CreateSnapshot(ctx, nil))

	find := func(where string) []string {
		t.Helper()
		resp, err := svc.FilterBlobs(ctx, where, nil)
		if err != nil {
			t.Fatalf("find %s: %v", where, err)
		}
		if resp.Where == nil || *resp.Where != where {
			t.Errorf("find %s: Where %v", where, resp.Where)
		}
		return found(resp.Blobs)
	}
	for _, c := range []struct {
		where string
		want  []string
	}{
		{`"project"='x'`, []string{"alpha/z{project=x}", "beta/a{project=x}", "gamma/c{project=x}"}},
		{`project = 'x' and "stage"='raw'`, []string{"alpha/z{project=x,stage=raw}"}},
		{`@container='beta' AND "project"='x'`, []string{"beta/a{project=x}"}},
		{`"project" >= 'x' AND "project" < 'z'`, []string{"alpha/z{project=x}", "beta/a{project=x}", "beta/b{project=y}", "gamma/c{project=x}"}},
		{`("stage" > 'd') AND ("stage" <= 'done')`, []string{"beta/a{stage=done}"}},
		{`"project"='none'`, []string{}},
		// Only @container: the container's tagged blobs, with no tags to show.
		{`@container='gamma'`, []string{"gamma/c{}"}},
	} {
		if got := find(c.where); !slices.Equal(got, c.want) {
			t.Errorf("find %s:\n got %v\nwant %v", c.where, got, c.want)
		}
	}

	beta := svc.NewContainerClient("beta")
	resp := must[container.FilterBlobsResponse](t, "find in beta")(beta.FilterBlobs(ctx, `"project" >= 'x'`, nil))
	if got, want := found(resp.Blobs), []string{"beta/a{project=x}", "beta/b{project=y}"}; !slices.Equal(got, want) {
		t.Errorf("find in beta: %v, want %v", got, want)
	}
	_, err := svc.NewContainerClient("nothere").FilterBlobs(ctx, `"project"='x'`, nil)
	wantFailure(t, "find in a missing container", err, http.StatusNotFound, "ContainerNotFound")

	// Paging: one a page, each page resuming where the last ended.
	var pages [][]string
	var marker *string
	for range 5 {
		resp, err := svc.FilterBlobs(ctx, `"project"='x'`, &service.FilterBlobsOptions{MaxResults: to.Ptr[int32](1), Marker: marker})
		if err != nil {
			t.Fatalf("page %d: %v", len(pages), err)
		}
		pages = append(pages, found(resp.Blobs))
		if resp.NextMarker == nil || *resp.NextMarker == "" {
			break
		}
		marker = resp.NextMarker
	}
	if got := fmt.Sprint(pages); got != "[[alpha/z{project=x}] [beta/a{project=x}] [gamma/c{project=x}]]" {
		t.Errorf("pages of one: %s", got)
	}

	bc := beta.NewBlobClient("b")
	must[blob.SetTagsResponse](t, "set tags")(bc.SetTags(ctx, map[string]string{"project": "x"}, nil))
	must[blob.DeleteResponse](t, "delete")(svc.NewContainerClient("gamma").NewBlobClient("c").Delete(ctx, nil))
	if got, want := find(`"project"='x'`), []string{"alpha/z{project=x}", "beta/a{project=x}", "beta/b{project=x}"}; !slices.Equal(got, want) {
		t.Errorf("after Set Blob Tags and Delete Blob: %v, want %v", got, want)
	}
}

// TestFindBlobsByTagsExpressions: the expressions Find Blobs by Tags
// takes and those it refuses with 400 InvalidQueryParameterValue and
// "Error parsing query": OR and <> (conditions only), a key compared
// twice from one side, more than 10 tags, unquoted values, characters a
// tag cannot hold, a key over 128 or a value over 256 characters, keys
// starting with @ but @container (which a container's search refuses
// too), an unclosed string or group, and nesting past the emulator's
// bound.
func TestFindBlobsByTagsExpressions(t *testing.T) {
	ctx := context.Background()
	cl := emulatorClient(t)
	must[azblob.CreateContainerResponse](t, "create")(cl.CreateContainer(ctx, "box", nil))
	var ten, eleven []string
	for i := range 11 {
		term := fmt.Sprintf(`"k%d"='v'`, i)
		if i < 10 {
			ten = append(ten, term)
		}
		eleven = append(eleven, term)
	}
	for _, c := range []struct {
		where     string
		container bool
		refused   string // "" when taken; else what the message holds
	}{
		{where: `"project"='x'`},
		{where: `project='x'`},
		{where: `"Malware scan result"='Malware'`},
		{where: `"a+b-c.d/e:f=g_h"='i j+k-l.m/n:o=p_q'`},
		{where: `"it""s"='it''s'`, refused: `'"' not permitted`},
		{where: `"a" > '1' AND "a" <= '5' AND "b"='x'`},
		{where: strings.Join(ten, " AND ")},
		{where: `@container='box' AND "a"='1'`},
		{where: `"a"='1'`, container: true},
		{where: `(("a"='1') AND ("b"='2'))`},
		{where: strings.Join(eleven, " AND "), refused: "Error parsing query: there can be at most 10 unique tags in a query"},
		{where: `"a"='1' OR "b"='2'`, refused: "unexpected or"},
		{where: `"a"<>'1'`, refused: "unexpected <>"},
		{where: `"a" > '1' AND "a" >= '2'`, refused: "can't have multiple conditions for a single tag unless they define a range"},
		{where: `"a" = '1' AND "a" < '2'`, refused: "can't have multiple conditions"},
		{where: `"a"=1`, refused: "expecting tag value"},
		{where: `"a"='1`, refused: "to close the string"},
		{where: `("a"='1'`, refused: "to close the expression group"},
		{where: `"a"`, refused: "expected an operator"},
		{where: `"a"='1' "b"='2'`, refused: "Unexpected token"},
		{where: ``, refused: "Expected a valid identifier"},
		{where: `a-b='1'`, refused: "unexpected 'a-b'"},
		{where: `"a!"='1'`, refused: "'!' not permitted in tag name or value"},
		{where: `"a"='é'`, refused: "'é' not permitted in tag name or value"},
		{where: `"` + strings.Repeat("k", 129) + `"='1'`, refused: "tag must be between 1 and 128 characters in length"},
		{where: `""='1'`, refused: "tag must be between 1 and 128 characters in length"},
		{where: `"a"='` + strings.Repeat("v", 257) + `'`, refused: "tag value must be between 0 and 256 characters in length"},
		{where: `@name='x'`, refused: "unsupported parameter '@name'"},
		{where: `@container='box'`, container: true, refused: "unsupported parameter '@container'"},
		{where: strings.Repeat("(", 40) + `"a"='1'` + strings.Repeat(")", 40), refused: "too many nested expressions"},
	} {
		var err error
		if c.container {
			_, err = cl.ServiceClient().NewContainerClient("box").FilterBlobs(ctx, c.where, nil)
		} else {
			_, err = cl.ServiceClient().FilterBlobs(ctx, c.where, nil)
		}
		name := c.where
		if len(name) > 60 {
			name = name[:60] + "..."
		}
		if c.refused == "" {
			if err != nil {
				t.Errorf("%s: refused: %v", name, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: taken, want 400 InvalidQueryParameterValue saying %q", name, c.refused)
			continue
		}
		if status, code := failure(err); status != http.StatusBadRequest || code != "InvalidQueryParameterValue" {
			t.Errorf("%s: %d %s, want 400 InvalidQueryParameterValue (%v)", name, status, code, err)
			continue
		}
		msg := html.UnescapeString(err.Error())
		if !strings.Contains(msg, "Error parsing query") || !strings.Contains(msg, c.refused) || !strings.Contains(msg, "<QueryParameterName>where</QueryParameterName>") {
			t.Errorf("%s: the answer does not say %q, where:\n%s", name, c.refused, msg)
		}
	}
	_, err := cl.ServiceClient().NewContainerClient("box").FilterBlobs(ctx, `"a"='1'`, &container.FilterBlobsOptions{MaxResults: to.Ptr[int32](0)})
	wantFailure(t, "maxresults=0", err, http.StatusBadRequest, "OutOfRangeQueryParameterValue")
}

// TestIfTagsConditions: x-ms-if-tags on every operation that takes it:
// met, the operation is done; not met, 412 ConditionNotMet and nothing
// changes; malformed, 400 InvalidHeaderValue naming the header. OR and
// <> are conditions' own. Put Block List creating a blob fails the
// condition (a real account's answer) where Put Blob does not; Copy
// Blob's source answers x-ms-source-if-tags; a batch's Delete Blob takes
// the condition on its own; an operation that does not take the header
// is 501.
func TestIfTagsConditions(t *testing.T) {
	ctx := context.Background()
	endpoint := startEmulator(t)
	cl := newClient(t, endpoint)
	must[azblob.CreateContainerResponse](t, "create")(cl.CreateContainer(ctx, "box", nil))
	tags := map[string]string{"project": "x", "stage": "raw"}
	upload := func(name string) {
		tagged(t, cl, "box", name, tags)
	}
	ops := []struct {
		name string
		do   func(cl *azblob.Client, name string) error
	}{
		{"Get Blob Properties", func(cl *azblob.Client, name string) error {
			_, err := cl.ServiceClient().NewContainerClient("box").NewBlobClient(name).GetProperties(ctx, nil)
			return err
		}},
		{"Get Blob", func(cl *azblob.Client, name string) error {
			_, err := cl.DownloadStream(ctx, "box", name, nil)
			return err
		}},
		{"Set Blob Metadata", func(cl *azblob.Client, name string) error {
			_, err := cl.ServiceClient().NewContainerClient("box").NewBlobClient(name).SetMetadata(ctx, map[string]*string{"m": to.Ptr("1")}, nil)
			return err
		}},
		{"Set Blob Properties", func(cl *azblob.Client, name string) error {
			_, err := cl.ServiceClient().NewContainerClient("box").NewBlobClient(name).SetHTTPHeaders(ctx, blob.HTTPHeaders{BlobContentType: to.Ptr("text/x")}, nil)
			return err
		}},
		{"Snapshot Blob", func(cl *azblob.Client, name string) error {
			_, err := cl.ServiceClient().NewContainerClient("box").NewBlobClient(name).CreateSnapshot(ctx, nil)
			return err
		}},
		{"Set Blob Tier", func(cl *azblob.Client, name string) error {
			_, err := cl.ServiceClient().NewContainerClient("box").NewBlobClient(name).SetTier(ctx, blob.AccessTierCool, nil)
			return err
		}},
		{"Get Blob Tags", func(cl *azblob.Client, name string) error {
			_, err := cl.ServiceClient().NewContainerClient("box").NewBlobClient(name).GetTags(ctx, nil)
			return err
		}},
		{"Set Blob Tags", func(cl *azblob.Client, name string) error {
			_, err := cl.ServiceClient().NewContainerClient("box").NewBlobClient(name).SetTags(ctx, tags, nil)
			return err
		}},
		{"Get Block List", func(cl *azblob.Client, name string) error {
			_, err := cl.ServiceClient().NewContainerClient("box").NewBlockBlobClient(name).GetBlockList(ctx, blockblob.BlockListTypeAll, nil)
			return err
		}},
		{"Put Blob", func(cl *azblob.Client, name string) error {
			_, err := cl.UploadBuffer(ctx, "box", name, []byte("new"), &azblob.UploadBufferOptions{Tags: tags})
			return err
		}},
		{"Put Block List", func(cl *azblob.Client, name string) error {
			_, err := cl.ServiceClient().NewContainerClient("box").NewBlockBlobClient(name).CommitBlockList(ctx, nil,
				&blockblob.CommitBlockListOptions{Tags: tags})
			return err
		}},
		{"Copy Blob", func(cl *azblob.Client, name string) error {
			src := cl.ServiceClient().NewContainerClient("box").NewBlobClient("source").URL()
			_, err := cl.ServiceClient().NewContainerClient("box").NewBlobClient(name).StartCopyFromURL(ctx, src,
				&blob.StartCopyFromURLOptions{BlobTags: tags})
			return err
		}},
		{"Lease Blob", func(cl *azblob.Client, name string) error {
			lc, err := lease.NewBlobClient(cl.ServiceClient().NewContainerClient("box").NewBlobClient(name), nil)
			if err != nil {
				return err
			}
			_, err = lc.AcquireLease(ctx, 15, nil)
			return err
		}},
		{"Delete Blob", func(cl *azblob.Client, name string) error {
			_, err := cl.DeleteBlob(ctx, "box", name, nil)
			return err
		}},
	}
	upload("source")
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			name := strings.ReplaceAll(op.name, " ", "-")
			upload(name)
			before := must[blob.GetPropertiesResponse](t, "properties")(cl.ServiceClient().NewContainerClient("box").NewBlobClient(name).GetProperties(ctx, nil))
			err := op.do(headerClient(t, endpoint, "x-ms-if-tags", `"project"='y'`), name)
			wantFailure(t, "condition not met", err, http.StatusPreconditionFailed, "ConditionNotMet")
			err = op.do(headerClient(t, endpoint, "x-ms-if-tags", `"project"=y`), name)
			wantFailure(t, "a malformed condition", err, http.StatusBadRequest, "InvalidHeaderValue")
			if op.name != "Get Blob Properties" && !strings.Contains(err.Error(), "<HeaderName>x-ms-if-tags</HeaderName>") {
				t.Errorf("the refusal does not name the header: %v", err)
			}
			after := must[blob.GetPropertiesResponse](t, "properties")(cl.ServiceClient().NewContainerClient("box").NewBlobClient(name).GetProperties(ctx, nil))
			if *after.ETag != *before.ETag || *after.AccessTier != *before.AccessTier || len(after.Metadata) != 0 {
				t.Errorf("refused, yet the blob changed: ETag %s, tier %s, metadata %v", *after.ETag, *after.AccessTier, after.Metadata)
			}
			if err := op.do(headerClient(t, endpoint, "x-ms-if-tags", `"project"='x' AND "stage" <> 'done' OR "none"='1'`), name); err != nil {
				t.Errorf("condition met: %v", err)
			}
		})
	}

	// Creating a blob: Put Blob passes, Put Block List fails.
	must[azblob.UploadBufferResponse](t, "Put Blob of a new blob")(headerClient(t, endpoint, "x-ms-if-tags", `"project"='x'`).UploadBuffer(ctx, "box", "new-put", []byte("x"), nil))
	_, err := headerClient(t, endpoint, "x-ms-if-tags", `"project"='x'`).ServiceClient().NewContainerClient("box").NewBlockBlobClient("new-list").CommitBlockList(ctx, nil, nil)
	wantFailure(t, "Put Block List of a new blob", err, http.StatusPreconditionFailed, "ConditionNotMet")

	// Copy Blob's source.
	src := cl.ServiceClient().NewContainerClient("box").NewBlobClient("source").URL()
	dst := func(expr string) error {
		_, err := headerClient(t, endpoint, "x-ms-source-if-tags", expr).ServiceClient().NewContainerClient("box").NewBlobClient("copied").StartCopyFromURL(ctx, src, nil)
		return err
	}
	wantFailure(t, "x-ms-source-if-tags not met", dst(`"project"='y'`), http.StatusPreconditionFailed, "SourceConditionNotMet")
	if err := dst(`"project"='x'`); err != nil {
		t.Errorf("x-ms-source-if-tags met: %v", err)
	}

	// A batch's sub-requests.
	upload("batched1")
	upload("batched2")
	cc := cl.ServiceClient().NewContainerClient("box")
	bb := must[*container.BatchBuilder](t, "batch")(cc.NewBatchBuilder())
	for name, expr := range map[string]string{"batched1": `"project"='x'`, "batched2": `"project"='y'`} {
		err := bb.Delete(name, &container.BatchDeleteOptions{DeleteOptions: blob.DeleteOptions{
			AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfTags: to.Ptr(expr)}}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	br := must[container.SubmitBatchResponse](t, "submit")(cc.SubmitBatch(ctx, bb, nil))
	for _, r := range br.Responses {
		code := ""
		if r.Error != nil {
			_, code = failure(r.Error)
		}
		if want := map[string]string{"box/batched1": "", "box/batched2": "ConditionNotMet"}[*r.BlobName]; code != want {
			t.Errorf("batch delete of %s: %q, want %q", *r.BlobName, code, want)
		}
	}

	// Operations that do not take the header.
	hc := headerClient(t, endpoint, "x-ms-if-tags", `"project"='x'`)
	_, err = hc.ServiceClient().NewContainerClient("box").NewBlockBlobClient("source").StageBlock(ctx, blockID("b"), rsc("x"), nil)
	wantFailure(t, "Put Block", err, http.StatusNotImplemented, "NotImplemented")
	_, err = hc.CreateContainer(ctx, "other", nil)
	wantFailure(t, "Create Container", err, http.StatusNotImplemented, "NotImplemented")
}

// TestFindBlobsByTagsAfterReopen: a location opened again finds the blobs
// by the tags they were written with and set to, as before it closed.
func TestFindBlobsByTagsAfterReopen(t *testing.T) {
	cfg := blobs.Config{Account: rawAccount, Location: t.TempDir()}
	s, err := blobs.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mustServe(t, s, "PUT", "box?restype=container", nil, "")
	mustServe(t, s, "PUT", "box/put", map[string]string{"x-ms-blob-type": "BlockBlob", "x-ms-tags": "project=x&stage=raw"}, "data")
	mustServe(t, s, "PUT", "box/set", map[string]string{"x-ms-blob-type": "BlockBlob"}, "data")
	mustServe(t, s, "PUT", "box/set?comp=tags", nil, `<Tags><TagSet><Tag><Key>project</Key><Value>x</Value></Tag></TagSet></Tags>`)
	find := "?comp=blobs&where=" + url.QueryEscape(`"project"='x'`)
	want := "<Blob><Name>put</Name><ContainerName>box</ContainerName><Tags><TagSet><Tag><Key>project</Key><Value>x</Value></Tag></TagSet></Tags></Blob>" +
		"<Blob><Name>set</Name><ContainerName>box</ContainerName><Tags><TagSet><Tag><Key>project</Key><Value>x</Value></Tag></TagSet></Tags></Blob>"
	if got := mustServe(t, s, "GET", find, nil, "").Body.String(); !strings.Contains(got, want) {
		t.Fatalf("before closing: %s", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := blobs.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if got := mustServe(t, again, "GET", find, nil, "").Body.String(); !strings.Contains(got, want) {
		t.Errorf("after opening the location again: %s", got)
	}
}

// TestFindBlobsByTagsPermission: an account SAS finds blobs with the
// permission f (filter by tags), and list (l) or read alone is 403
// AuthorizationPermissionMismatch ("Manage and find Azure Blob data with
// blob index tags": the list permission "isn't enough").
func TestFindBlobsByTagsPermission(t *testing.T) {
	ctx := context.Background()
	endpoint := startEmulator(t)
	cl := newClient(t, endpoint)
	must[azblob.CreateContainerResponse](t, "create")(cl.CreateContainer(ctx, "box", nil))
	tagged(t, cl, "box", "b", map[string]string{"project": "x"})
	cred, err := azblob.NewSharedKeyCredential(azurite.AccountName, azurite.AccountKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		perms sas.AccountPermissions
		code  string
	}{
		{sas.AccountPermissions{FilterByTags: true}, ""},
		{sas.AccountPermissions{Read: true, List: true, Tag: true}, "AuthorizationPermissionMismatch"},
	} {
		qp, err := sas.AccountSignatureValues{
			Protocol: sas.ProtocolHTTPSandHTTP, ExpiryTime: time.Now().Add(time.Hour).UTC(),
			Permissions: c.perms.String(), ResourceTypes: (&sas.AccountResourceTypes{Service: true, Container: true, Object: true}).String(),
		}.SignWithSharedKey(cred)
		if err != nil {
			t.Fatal(err)
		}
		sc := must[*service.Client](t, "SAS client")(service.NewClientWithNoCredential(endpoint+"/?"+qp.Encode(), nil))
		resp, err := sc.FilterBlobs(ctx, `"project"='x'`, nil)
		if c.code == "" {
			if err != nil || len(resp.Blobs) != 1 {
				t.Errorf("sp=%s: %v, %v", c.perms.String(), err, resp.Blobs)
			}
			continue
		}
		wantFailure(t, "sp="+c.perms.String(), err, http.StatusForbidden, c.code)
	}
}
