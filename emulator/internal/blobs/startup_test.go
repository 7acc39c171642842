package blobs_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"
)

// TestStartupRequests sends what Storage Explorer and the SDKs ask a
// Blob service for when they connect (service properties, containers
// with their metadata, a container's access policy, statistics from the
// secondary endpoint): each is answered, none with 501.
func TestStartupRequests(t *testing.T) {
	ctx := context.Background()
	endpoint := startEmulator(t)
	c := newClient(t, endpoint)
	sc := c.ServiceClient()

	props := must[service.GetPropertiesResponse](t, "service properties")(sc.GetProperties(ctx, nil))
	if props.Logging == nil || *props.Logging.Version != "1.0" || *props.Logging.Read || props.HourMetrics == nil || *props.HourMetrics.Enabled ||
		props.StaticWebsite == nil || *props.StaticWebsite.Enabled || props.DeleteRetentionPolicy == nil || *props.DeleteRetentionPolicy.Enabled || len(props.CORS) != 0 {
		t.Errorf("service properties %+v: want a new account's (analytics, static website and soft delete off, no CORS)", props.StorageServiceProperties)
	}

	must[azblob.CreateContainerResponse](t, "create")(c.CreateContainer(ctx, "startup", &azblob.CreateContainerOptions{
		Metadata: map[string]*string{"owner": to.Ptr("ops")}, Access: to.Ptr(container.PublicAccessTypeBlob)}))
	page := must[service.ListContainersResponse](t, "list containers")(sc.NewListContainersPager(&service.ListContainersOptions{
		Include: service.ListContainersInclude{Metadata: true}}).NextPage(ctx))
	if len(page.ContainerItems) != 1 || page.ContainerItems[0].Metadata["owner"] == nil || *page.ContainerItems[0].Metadata["owner"] != "ops" {
		t.Errorf("containers with metadata: %+v", page.ContainerItems)
	}

	acl := must[container.GetAccessPolicyResponse](t, "container access policy")(sc.NewContainerClient("startup").GetAccessPolicy(ctx, nil))
	if acl.BlobPublicAccess == nil || *acl.BlobPublicAccess != container.PublicAccessTypeBlob || len(acl.SignedIdentifiers) != 0 || acl.ETag == nil {
		t.Errorf("access policy: public access %v, %d identifiers, ETag %v", deref(acl.BlobPublicAccess), len(acl.SignedIdentifiers), deref(acl.ETag))
	}

	// Statistics are the secondary endpoint's to give, as on Azure; the
	// secondary serves reads of the same data and refuses writes.
	secondary := newClient(t, endpoint+"-secondary")
	stats := must[service.GetStatisticsResponse](t, "statistics")(secondary.ServiceClient().GetStatistics(ctx, nil))
	if stats.GeoReplication == nil || stats.GeoReplication.Status == nil || *stats.GeoReplication.Status != service.BlobGeoReplicationStatusLive || stats.GeoReplication.LastSyncTime == nil {
		t.Errorf("statistics: %+v", stats.GeoReplication)
	}
	_, err := sc.GetStatistics(ctx, nil)
	wantFailure(t, "statistics from the primary", err, http.StatusBadRequest, "InvalidQueryParameterValue")
	page = must[service.ListContainersResponse](t, "list containers on the secondary")(secondary.ServiceClient().NewListContainersPager(nil).NextPage(ctx))
	if len(page.ContainerItems) != 1 {
		t.Errorf("the secondary lists %d containers, want 1", len(page.ContainerItems))
	}
	_, err = secondary.CreateContainer(ctx, "other", nil)
	wantFailure(t, "create a container on the secondary", err, http.StatusForbidden, "AuthorizationFailure")
}
