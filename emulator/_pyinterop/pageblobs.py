"""pageblobs.py drives page blobs with the Azure SDK for Python (Debian's
python3-azure, azure-storage-blob) against the account of
TABLEKIT_CONNECTION_STRING, checking each answer as Azure gives it:
create_page_blob, upload_page, clear_page, get_page_ranges, resize_blob,
set_sequence_number, ranged downloads, a write off the page boundaries
refused, a sequence number condition refused. emulator/pypageblobs_test.go
runs it on tablekit's emulator and on Azurite 3.37; by hand:

    TABLEKIT_CONNECTION_STRING='...' python3 emulator/_pyinterop/pageblobs.py

With TABLEKIT_TARGET=azurite a step where Azurite 3.37 answers otherwise
than Azure expects Azurite's answer instead, and says so in "saw" (the
evidence of both answers is beside each one in AZURITE). One JSON line
per step on stdout (steps.py); exit 1 when a step is not ok, 2 when the
script cannot start.
"""

import os
import sys
import uuid

from steps import connection, failed, step

try:
    from azure.core.exceptions import HttpResponseError
    from azure.storage.blob import BlobServiceClient, BlobType, ContentSettings, SequenceNumberAction
except ImportError as e:
    print(f"pageblobs.py: {e}: install Debian's python3-azure (apt-get install python3-azure)", file=sys.stderr)
    sys.exit(2)

CONN, _ = connection("pageblobs.py", ("BlobEndpoint", "AccountKey"))
ON_AZURITE = os.environ.get("TABLEKIT_TARGET") == "azurite"

# Where Azurite 3.37 departs from Azure: the step, what Azure answers (the
# step's own expectation) and what Azurite answers instead, with the
# evidence of Azurite's answer (its code, in integration/azurite/_npm).
AZURITE = {
    "pages.upload": "Get Page Ranges lists each write as a range of its own "
    "(PageBlobRangesManager.mergeRange splits and inserts, never merges: "
    "Azurite's own test 'uploadPages with sequential pages' expects 3 ranges for 3 adjacent writes)",
    "pages.misaligned": "a range off the page boundaries is 416 with the code 'Requested Range Not Satisfiable' "
    "(PageBlobHandler.clearPages: deserializePageBlobRangeHeader throws, getInvalidPageRange); "
    "Azure: 400 InvalidHeaderValue naming Range (azblob's recorded TestBlobClearPagesInvalidRange)",
    "pages.beyondEnd": "a write past the blob's end is 416 with the code 'Requested Range Not Satisfiable' "
    "(PageBlobHandler.uploadPages: start >= contentLength, getInvalidPageRange); "
    "Azure's code for it is InvalidPageRange (REST 'Blob service error codes')",
    "pages.resize": "a size off the page boundaries is 400 InvalidOperation without HeaderName "
    "(LokiBlobMetadataStore via PageBlobHandler.resize: getInvalidOperation); "
    "Azure: 400 InvalidHeaderValue naming x-ms-blob-content-length (azblob's recorded TestBlobResizeInvalidSizeMisaligned)",
}

NAME = "pages" + uuid.uuid4().hex[:8]
service = BlobServiceClient.from_connection_string(CONN, retry_total=0)
container = service.get_container_client(NAME)


def fails(fn, *args, **kwargs):
    """Calls fn, which must fail; returns (status, code) of the service's
    refusal, or ("raised", type) for a client-side one, or None."""
    try:
        fn(*args, **kwargs)
    except HttpResponseError as e:
        code = getattr(e, "error_code", None) or e.response.headers.get("x-ms-error-code")
        return (e.status_code, code)
    except ValueError as e:
        return ("raised", type(e).__name__)
    return None


def ranges(blob, raw=False, **kwargs):
    """The page ranges as [start, end] pairs. On Azurite, which lists
    each write apart (AZURITE["pages.upload"]), ranges that meet are
    merged here unless raw, so that the other steps check the rest."""
    pages, _ = blob.get_page_ranges(**kwargs)
    out = []
    for r in pages:
        if ON_AZURITE and not raw and out and out[-1][1] + 1 == r["start"]:
            out[-1][1] = r["end"]
            continue
        out.append([r["start"], r["end"]])
    return out


def read(blob, offset, length):
    return blob.download_blob(offset=offset, length=length).readall()


disk = container.get_blob_client("disk")


def create():
    container.create_container()
    disk.create_page_blob(4096, sequence_number=3, metadata={"role": "disk"},
                          content_settings=ContentSettings(content_type="application/x-disk"))
    p = disk.get_blob_properties()
    problems = []
    if p.blob_type != BlobType.PageBlob or p.size != 4096 or p.page_blob_sequence_number != 3:
        problems.append(f"type {p.blob_type}, size {p.size}, sequence {p.page_blob_sequence_number}: want PageBlob, 4096, 3")
    if p.metadata != {"role": "disk"} or p.content_settings.content_type != "application/x-disk":
        problems.append(f"metadata {p.metadata}, content type {p.content_settings.content_type}")
    if read(disk, 0, 4096) != bytes(4096):
        problems.append("a new page blob does not read as zeros")
    if ranges(disk):
        problems.append(f"a new page blob has ranges {ranges(disk)}")
    return problems, {"type": str(p.blob_type), "size": p.size, "sequence": p.page_blob_sequence_number}


def upload():
    r = disk.upload_page(b"a" * 1024, offset=512, length=1024)
    disk.upload_page(b"b" * 512, offset=1536, length=512)
    problems = []
    if r.get("blob_sequence_number") != 3 or not r.get("etag"):
        problems.append(f"upload answered sequence {r.get('blob_sequence_number')}, etag {r.get('etag')}")
    got = ranges(disk, raw=True)
    want = [[512, 2047]]  # written pages that meet are one range (weak: docs/EMULATOR.md)
    if ON_AZURITE:
        want = [[512, 1535], [1536, 2047]]
    if got != want:
        problems.append(f"ranges {got}, want {want}")
    return problems, {"ranges": got, "azurite": AZURITE["pages.upload"] if ON_AZURITE else None}


def clear():
    disk.clear_page(offset=1024, length=512)
    problems = []
    got = ranges(disk)
    if got != [[512, 1023], [1536, 2047]]:
        problems.append(f"ranges after clearing 1024-1535: {got}")
    within = ranges(disk, offset=1024, length=1024)
    if within != [[1536, 2047]]:
        problems.append(f"ranges within 1024-2047: {within}")
    if read(disk, 1024, 512) != bytes(512):
        problems.append("cleared pages do not read as zeros")
    return problems, {"ranges": got, "within": within}


def download():
    got = read(disk, 500, 1600)
    want = bytes(12) + b"a" * 512 + bytes(512) + b"b" * 512 + bytes(52)
    return ([] if got == want else [f"bytes 500-2099: {got[:16]!r}... ({len(got)} bytes) differ"]), {"length": len(got)}


def misaligned():
    problems = []
    client_side = fails(disk.upload_page, b"x" * 511, offset=0, length=511)
    if client_side != ("raised", "ValueError"):
        problems.append(f"the SDK sent a 511-byte page: {client_side}")
    # The SDK refuses it before sending; the service's own answer, to the
    # request azblob's recorded TestBlobClearPagesInvalidRange sends:
    served = fails(disk._client.page_blob.clear_pages, content_length=0, range="bytes=0-512")
    want = (400, "InvalidHeaderValue")
    if ON_AZURITE:
        want = (416, "Requested Range Not Satisfiable")
    if served != want:
        problems.append(f"clear of bytes=0-512: {served}, want {want}")
    return problems, {"sdk": client_side, "service": served, "azurite": AZURITE["pages.misaligned"] if ON_AZURITE else None}


def beyond_end():
    got = fails(disk.upload_page, b"x" * 512, offset=4096, length=512)
    want = (416, "InvalidPageRange")
    if ON_AZURITE:
        want = (416, "Requested Range Not Satisfiable")
    return ([] if got == want else [f"a write past the end: {got}, want {want}"]), \
        {"answer": got, "azurite": AZURITE["pages.beyondEnd"] if ON_AZURITE else None}


def sequence_number():
    problems, saw = [], []
    for action, n, want in [(SequenceNumberAction.Update, 10, 10), (SequenceNumberAction.Max, 7, 10),
                            (SequenceNumberAction.Max, 12, 12), (SequenceNumberAction.Increment, None, 13)]:
        r = disk.set_sequence_number(action, n)
        saw.append(r.get("blob_sequence_number"))
        if r.get("blob_sequence_number") != want:
            problems.append(f"{action} {n}: {r.get('blob_sequence_number')}, want {want}")
    if disk.get_blob_properties().page_blob_sequence_number != 13:
        problems.append("the properties do not show sequence number 13")
    return problems, {"after": saw}


def sequence_condition():
    problems = []
    for kwargs, want in [({"if_sequence_number_lt": 13}, (412, "SequenceNumberConditionNotMet")),
                         ({"if_sequence_number_eq": 12}, (412, "SequenceNumberConditionNotMet")),
                         ({"if_sequence_number_lte": 12}, (412, "SequenceNumberConditionNotMet"))]:
        got = fails(disk.upload_page, b"s" * 512, offset=0, length=512, **kwargs)
        if got != want:
            problems.append(f"{kwargs}: {got}, want {want}")
    r = disk.upload_page(b"s" * 512, offset=0, length=512, if_sequence_number_lte=13, if_sequence_number_eq=13)
    if r.get("blob_sequence_number") != 13:
        problems.append(f"a write meeting its conditions answered {r}")
    return problems, None


def resize():
    problems = []
    r = disk.resize_blob(1024)
    if r.get("blob_sequence_number") != 13:
        problems.append(f"resize answered sequence {r.get('blob_sequence_number')}")
    if ranges(disk) != [[0, 1023]]:
        problems.append(f"ranges after shrinking to 1024: {ranges(disk)}")
    disk.resize_blob(8192)
    p = disk.get_blob_properties()
    if p.size != 8192 or p.content_settings.content_type != "application/x-disk":
        problems.append(f"grown: size {p.size}, content type {p.content_settings.content_type}")
    if read(disk, 1024, 7168) != bytes(7168):
        problems.append("pages a smaller size released came back")
    got = fails(disk._client.page_blob.resize, blob_content_length=1000)
    want = (400, "InvalidOperation") if ON_AZURITE else (400, "InvalidHeaderValue")
    if got != want:
        problems.append(f"a size off the page boundaries: {got}, want {want}")
    return problems, {"misaligned": got, "azurite": AZURITE["pages.resize"] if ON_AZURITE else None}


def wrong_type():
    problems = []
    block = container.get_blob_client("block")
    block.upload_blob(b"x" * 1024)
    got = fails(block.upload_page, b"x" * 512, offset=0, length=512)
    if got != (409, "InvalidBlobType"):
        problems.append(f"upload_page on a block blob: {got}")
    got2 = fails(disk.stage_block, "YmxvY2s=", b"x")
    if got2 != (409, "InvalidBlobType"):
        problems.append(f"stage_block on a page blob: {got2}")
    return problems, {"page on block": got, "block on page": got2}


def listing():
    items = {b.name: b for b in container.list_blobs()}
    d = items.get("disk")
    if d is None:
        return ["the page blob is not listed"], None
    problems = []
    if d.blob_type != BlobType.PageBlob or d.size != 8192 or d.page_blob_sequence_number != 13:
        problems.append(f"listed type {d.blob_type}, size {d.size}, sequence {d.page_blob_sequence_number}")
    return problems, {"type": str(d.blob_type), "size": d.size}


def snapshot_copy():
    problems = []
    snap = disk.create_snapshot()
    disk.upload_page(b"z" * 512, offset=4096, length=512)
    old = container.get_blob_client("disk", snapshot=snap["snapshot"])
    if ranges(old) != [[0, 1023]]:
        problems.append(f"the snapshot's ranges {ranges(old)}")
    copy = container.get_blob_client("copy")
    copy.start_copy_from_url(disk.url)
    p = copy.get_blob_properties()
    if p.blob_type != BlobType.PageBlob or p.size != 8192 or p.copy.status != "success":
        problems.append(f"copy: type {p.blob_type}, size {p.size}, status {p.copy.status}")
    if ranges(copy) != [[0, 1023], [4096, 4607]] or read(copy, 4096, 512) != b"z" * 512:
        problems.append(f"the copy's ranges {ranges(copy)}")
    return problems, None


try:
    for name, fn in [("pages.create", create), ("pages.upload", upload), ("pages.clear", clear),
                     ("pages.download", download), ("pages.misaligned", misaligned), ("pages.beyondEnd", beyond_end),
                     ("pages.sequenceNumber", sequence_number), ("pages.sequenceCondition", sequence_condition),
                     ("pages.resize", resize), ("pages.wrongType", wrong_type), ("pages.listing", listing),
                     ("pages.snapshotCopy", snapshot_copy)]:
        step(name, fn)
finally:
    try:
        container.delete_container()
    except HttpResponseError:
        pass
sys.exit(1 if failed() else 0)
