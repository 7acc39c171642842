"""blobfeatures.py drives the Azure SDK for Python (Debian's python3-azure)
through the Blob service's features beyond reads and writes, against the
account of TABLEKIT_CONNECTION_STRING (emulator/pyblobfeatures_test.go runs
it on tablekit's emulator and on Azurite):

    TABLEKIT_CONNECTION_STRING='...' python3 emulator/_pyinterop/blobfeatures.py

Steps: blob index tags set at upload and read back; Find Blobs by Tags on
the account and on a container, paged; refused expressions; x-ms-if-tags
conditions met, not met and malformed; a blob batch of deletes; Set Blob
Tier, and an archived blob refusing a read. Each checks the answer Azure
documents or a real account was recorded giving; "saw" holds what the step
saw, free of names and times, so that two services' answers compare. One
JSON line per step on stdout (steps.py); exit 1 when a step is not ok, 2
when the script cannot start.
"""

import sys
import uuid

from steps import connection, failed, step

try:
    from azure.core.exceptions import HttpResponseError
    from azure.storage.blob import BlobServiceClient
except ImportError as e:
    print(f"blobfeatures.py: {e}: install Debian's python3-azure (apt-get install python3-azure)", file=sys.stderr)
    sys.exit(2)

CONN, _ = connection("blobfeatures.py", ("BlobEndpoint", "AccountKey"))

# One try per request: a step sees the service's first answer.
SERVICE = BlobServiceClient.from_connection_string(CONN, retry_total=0)
SUFFIX = uuid.uuid4().hex[:8]
# Two containers, ONE's name before TWO's; saw names them by role.
ONE, TWO = "bfone" + SUFFIX, "bftwo" + SUFFIX
ROLE = {ONE: "one", TWO: "two"}


def answer(fn, *args, **kwargs):
    """The service's refusal of fn(...) as {status, code}, or "ok"."""
    try:
        fn(*args, **kwargs)
    except HttpResponseError as e:
        return {"status": e.status_code, "code": e.error_code}
    return "ok"


def refusal(fn, *args, **kwargs):
    """answer, with whether the message says the expression did not parse."""
    try:
        for _ in fn(*args, **kwargs):
            pass
    except HttpResponseError as e:
        return {"status": e.status_code, "code": e.error_code, "parsing": "Error parsing query" in str(e)}
    return "ok"


def found(items):
    """Find Blobs by Tags' items as "role/name{k=v,...}", in the order answered."""
    return [f"{ROLE.get(b.container_name, b.container_name)}/{b.name}{{"
            + ",".join(f"{k}={v}" for k, v in sorted((b.tags or {}).items())) + "}" for b in items]


def pages(paged):
    """The pages of an ItemPaged, each as found lists them."""
    return [found(list(p)) for p in paged.by_page()]


def tags_at_upload():
    problems = []
    one = SERVICE.create_container(ONE)
    two = SERVICE.create_container(TWO)
    want = {"project": "alpha", "stage": "raw", "owner": "ann"}
    one.upload_blob("zeta", b"data", tags=want)
    two.upload_blob("alpha-doc", b"data", tags={"project": "alpha", "stage": "done"})
    two.upload_blob("beta-doc", b"data", tags={"project": "beta"})
    got = one.get_blob_client("zeta").get_blob_tags()
    count = one.get_blob_client("zeta").get_blob_properties().tag_count
    listed = [b.tags for b in one.list_blobs(include=["tags"])]
    if got != want:
        problems.append(f"get_blob_tags: {got}, want {want}")
    if count != 3:
        problems.append(f"tag_count {count}, want 3")
    if listed != [want]:
        problems.append(f"list_blobs(include=tags): {listed}, want [{want}]")
    return problems, {"tags": got, "tagCount": count, "listed": listed}


def find_in_account():
    problems = []
    saw = {
        "project": found(SERVICE.find_blobs_by_tags("\"project\"='alpha'")),
        "two": found(SERVICE.find_blobs_by_tags("\"project\"='alpha' AND \"stage\"='raw'")),
        "scoped": found(SERVICE.find_blobs_by_tags(f"@container='{TWO}' AND \"project\" >= 'a'")),
        "pages": pages(SERVICE.find_blobs_by_tags("\"project\"='alpha'", results_per_page=1)),
    }
    # A real account orders by container, then by name, and answers only
    # the tags the expression names (the Python SDK's recordings of
    # test_filter_blobs).
    want = {
        "project": ["one/zeta{project=alpha}", "two/alpha-doc{project=alpha}"],
        "two": ["one/zeta{project=alpha,stage=raw}"],
        "scoped": ["two/alpha-doc{project=alpha}", "two/beta-doc{project=beta}"],
        "pages": [["one/zeta{project=alpha}"], ["two/alpha-doc{project=alpha}"]],
    }
    for k, w in want.items():
        if saw[k] != w:
            problems.append(f"{k}: {saw[k]}, want {w}")
    return problems, saw


def find_in_container():
    two = SERVICE.get_container_client(TWO)
    saw = {
        "range": found(two.find_blobs_by_tags("\"project\" > 'a' AND \"project\" < 'b'")),
        "pages": pages(two.find_blobs_by_tags("\"project\" >= 'alpha'", results_per_page=1)),
    }
    want = {
        "range": ["two/alpha-doc{project=alpha}"],
        "pages": [["two/alpha-doc{project=alpha}"], ["two/beta-doc{project=beta}"]],
    }
    problems = [f"{k}: {saw[k]}, want {w}" for k, w in want.items() if saw[k] != w]
    return problems, saw


def find_refused():
    # 400 InvalidQueryParameterValue, "Error parsing query at or near
    # character position N: ..." (a real account's answer, azure-cli#21956).
    saw = {
        "unquoted": refusal(SERVICE.find_blobs_by_tags, "\"project\"=alpha"),
        "or": refusal(SERVICE.find_blobs_by_tags, "\"project\"='alpha' OR \"stage\"='raw'"),
    }
    want = {"status": 400, "code": "InvalidQueryParameterValue", "parsing": True}
    problems = [f"{k}: {v}, want {want}" for k, v in saw.items() if v != want]
    return problems, saw


def if_tags():
    blob = SERVICE.get_container_client(ONE).get_blob_client("zeta")
    met, unmet = "\"project\"='alpha'", "\"project\"='beta'"
    saw = {
        "readMet": answer(blob.get_blob_properties, if_tags_match_condition=met),
        "readUnmet": answer(blob.get_blob_properties, if_tags_match_condition=unmet),
        "writeUnmet": answer(blob.set_blob_metadata, {"m": "1"}, if_tags_match_condition=unmet),
        "metadataAfter": blob.get_blob_properties().metadata,
        "writeMetByOr": answer(blob.set_blob_metadata, {"m": "2"},
                               if_tags_match_condition="\"project\"='beta' OR \"stage\" <> 'done'"),
        "metadataAfterOr": blob.get_blob_properties().metadata,
        "deleteUnmet": answer(blob.delete_blob, if_tags_match_condition=unmet),
        "existsAfter": blob.exists(),
        "malformed": answer(blob.get_blob_tags, if_tags_match_condition="\"project\"=alpha"),
    }
    # Not met: 412 ConditionNotMet (a real account's answer, the Python
    # SDK's recording test_append_block_with_if_tags); malformed: 400
    # InvalidHeaderValue.
    want = {
        "readMet": "ok",
        "readUnmet": {"status": 412, "code": "ConditionNotMet"},
        "writeUnmet": {"status": 412, "code": "ConditionNotMet"},
        "metadataAfter": {},
        "writeMetByOr": "ok",
        "metadataAfterOr": {"m": "2"},
        "deleteUnmet": {"status": 412, "code": "ConditionNotMet"},
        "existsAfter": True,
        "malformed": {"status": 400, "code": "InvalidHeaderValue"},
    }
    problems = [f"{k}: {saw[k]}, want {w}" for k, w in want.items() if saw[k] != w]
    return problems, saw


def batch_delete():
    one = SERVICE.get_container_client(ONE)
    for name in ("b1", "b2", "b3", "b4"):
        one.upload_blob(name, b"x", tags={"keep": "no" if name != "b4" else "yes"})
    statuses = [r.status_code for r in one.delete_blobs("b1", "b2", "b3", raise_on_any_failure=False)]
    left = sorted(b.name for b in one.list_blobs(name_starts_with="b"))
    partial = [r.status_code for r in one.delete_blobs(
        "missing", {"name": "b4", "if_tags_match_condition": "\"keep\"='no'"}, raise_on_any_failure=False)]
    saw = {"deleted": statuses, "left": left, "partial": partial}
    # Each sub-request answered on its own in the 202 batch: 202 for each
    # delete, 404 for a missing blob, 412 for a condition not met (REST
    # "Blob Batch").
    want = {"deleted": [202, 202, 202], "left": ["b4"], "partial": [404, 412]}
    problems = [f"{k}: {saw[k]}, want {w}" for k, w in want.items() if saw[k] != w]
    return problems, saw


def set_tier():
    blob = SERVICE.get_container_client(ONE).get_blob_client("tiered")
    blob.upload_blob(b"tiered data")
    before = blob.get_blob_properties()
    blob.set_standard_blob_tier("Cool")
    after = blob.get_blob_properties()
    saw = {"before": [before.blob_tier, before.blob_tier_inferred], "after": [after.blob_tier, after.blob_tier_inferred],
           "etagKept": before.etag == after.etag}
    # A blob written without a tier is Hot, inferred; Set Blob Tier sets it
    # and leaves the ETag; x-ms-access-tier-inferred is "set only if the
    # tier on the blob is inferred" (REST "Set Blob Tier", "Get Blob
    # Properties"), so once set the SDK reads None.
    want = {"before": ["Hot", True], "after": ["Cool", None], "etagKept": True}
    problems = [f"{k}: {saw[k]}, want {w}" for k, w in want.items() if saw[k] != w]
    return problems, saw


def archived():
    blob = SERVICE.get_container_client(ONE).get_blob_client("tiered")
    blob.set_standard_blob_tier("Archive")
    saw = {
        "read": answer(lambda: blob.download_blob().readall()),
        "tier": blob.get_blob_properties().blob_tier,
        "tags": answer(blob.get_blob_tags),
    }
    # An archived blob is offline: Get Blob is 409 BlobArchived, its
    # properties and tags are read as usual ("Access tiers for blob data").
    want = {"read": {"status": 409, "code": "BlobArchived"}, "tier": "Archive", "tags": "ok"}
    problems = [f"{k}: {saw[k]}, want {w}" for k, w in want.items() if saw[k] != w]
    return problems, saw


def clean_up():
    for c in (ONE, TWO):
        SERVICE.delete_container(c)
    return [], None


step("tags.atUpload", tags_at_upload)
step("tags.findInAccount", find_in_account)
step("tags.findInContainer", find_in_container)
step("tags.findRefused", find_refused)
step("tags.ifTags", if_tags)
step("batch.delete", batch_delete)
step("tier.set", set_tier)
step("tier.archived", archived)
step("cleanUp", clean_up)
sys.exit(1 if failed() else 0)
