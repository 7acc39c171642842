package azrules

import "slices"

// NewestServiceVersion is the newest x-ms-version the emulator answers:
// the one @azure/storage-blob 12.34.0 (the JavaScript SDK tablekit's
// interop test pins) sends by default. Its answers follow the versions'
// shared rules; the few that differ by version (an append blob's seal,
// 2022-11-02) check the request's version themselves.
const NewestServiceVersion = "2026-10-06"

// serviceVersions are Azure Storage's published service versions, oldest
// first, up to NewestServiceVersion: Azurite 3.37.0's list
// (ValidAPIVersions of its blob, queue and table services, which follows
// "Previous Azure Storage service versions", docs) and 2026-10-06.
//
// Evidence that Azure refuses any other value, a well-formed date
// included, with 400 InvalidHeaderValue naming x-ms-version: real
// services' answers quoted in SDK threads (Azure/azure-sdk-for-net 45302:
// Azure.Storage.Blobs 12.21.0 sending 2024-08-04 before that version was
// deployed; Azure/azure-storage-python 631: 2019-02-02, likewise), strong;
// and "Versioning for Azure Storage" (docs): using a version not deployed
// in the account's region "might generate a x-ms-version mismatch error".
var serviceVersions = []string{
	"2009-04-14", "2009-07-17", "2009-09-19", "2011-08-18", "2012-02-12",
	"2013-08-15", "2014-02-14", "2015-02-21", "2015-04-05", "2015-07-08",
	"2015-12-11", "2016-05-31", "2017-04-17", "2017-07-29", "2017-11-09",
	"2018-03-28", "2018-11-09", "2019-02-02", "2019-07-07", "2019-10-10",
	"2019-12-12", "2020-02-10", "2020-04-08", "2020-06-12", "2020-08-04",
	"2020-10-02", "2020-12-06", "2021-02-12", "2021-04-10", "2021-06-08",
	"2021-08-06", "2021-10-04", "2021-12-02", "2022-11-02", "2023-01-03",
	"2023-08-03", "2023-11-03", "2024-02-04", "2024-05-04", "2024-08-04",
	"2024-11-04", "2025-01-05", "2025-05-05", "2025-07-05", "2025-11-05",
	"2026-02-06", "2026-04-06", "2026-06-06", "2026-10-06",
}

// ServiceVersions returns the x-ms-version values Azure Storage has
// published, oldest first, up to NewestServiceVersion (a new slice).
func ServiceVersions() []string { return slices.Clone(serviceVersions) }

// IsServiceVersion reports whether v is one of ServiceVersions. An absent
// header is not a version: the caller decides what its absence means
// (Azure accepts anonymous requests without one).
func IsServiceVersion(v string) bool {
	_, found := slices.BinarySearch(serviceVersions, v)
	return found
}
