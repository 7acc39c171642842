"""interop.py drives the Azure SDK for Python (azure-data-tables,
azure-storage-queue, azure-storage-blob; Debian's python3-azure) against the
storage account of TABLEKIT_CONNECTION_STRING: tablekit's emulator, as
emulator/pyinterop_test.go runs it, or any account by hand:

    apt-get install python3-azure
    TABLEKIT_CONNECTION_STRING='...' python3 emulator/_pyinterop/interop.py

It prints one JSON line per step on stdout:

    {"step": "tables.edm", "ok": true, "ms": 12, "saw": {...}}

Each step checks what Azure answers (expect) as a Python user's code sees
it; a step whose result differs has "ok": false and "problems", a step that
raised unexpectedly has "error"; "ms" is the step's time. The exit status is 1 when any step is not
ok, 2 when the script cannot start. Names carry a random suffix, so the
script can run twice on one account.
"""

import base64
import datetime
import json
import re
import sys
import time
import traceback
import uuid

from steps import connection

try:
    from azure.core import MatchConditions
    from azure.core.credentials import AzureNamedKeyCredential, AzureSasCredential
    from azure.core.exceptions import HttpResponseError
    from azure.data.tables import (
        EdmType,
        EntityProperty,
        TableClient,
        TableSasPermissions,
        TableServiceClient,
        TableTransactionError,
        UpdateMode,
        generate_table_sas,
    )
    from azure.storage.blob import (
        BlobBlock,
        BlobClient,
        BlobSasPermissions,
        BlobServiceClient,
        generate_blob_sas,
    )
    from azure.storage.queue import QueueServiceClient
except ImportError as e:
    print(f"interop.py: {e}: install Debian's python3-azure (apt-get install python3-azure)", file=sys.stderr)
    sys.exit(2)

CONN, FIELDS = connection("interop.py", ("AccountName", "AccountKey", "TableEndpoint", "BlobEndpoint", "QueueEndpoint"))
ACCOUNT, KEY = FIELDS["AccountName"], FIELDS["AccountKey"]
TABLE_ENDPOINT = FIELDS["TableEndpoint"].rstrip("/")
BLOB_ENDPOINT = FIELDS["BlobEndpoint"].rstrip("/")

SUFFIX = uuid.uuid4().hex[:8]
# One try per request: a step sees the service's first answer.
NO_RETRY = {"retry_total": 0}

failures = 0


def step(name):
    """Runs the decorated function as a step at once and prints its line."""

    def run(fn):
        global failures
        problems = []

        def expect(cond, what):
            if not cond:
                problems.append(what)

        line = {"step": name}
        start = time.monotonic()
        try:
            line["saw"] = fn(expect)
        except Exception as e:  # noqa: BLE001 - a step reports what it raised
            line["error"] = describe(e)
            line["trace"] = traceback.format_exc().splitlines()[-3:]
        line["ms"] = round((time.monotonic() - start) * 1000)
        line["ok"] = not problems and "error" not in line
        if problems:
            line["problems"] = problems
        if not line["ok"]:
            failures += 1
        print(json.dumps(line, default=str, ensure_ascii=False), flush=True)
        return fn

    return run


def describe(e):
    """An error as a Python user sees it: the status, the service's code,
    the first line of its message."""
    if isinstance(e, HttpResponseError):
        return {
            "type": type(e).__name__,
            "status": e.status_code,
            "code": error_code(e),
            "message": (str(e.message or e).splitlines() or [""])[0],
        }
    return {"type": type(e).__name__, "message": str(e)}


def error_code(e):
    """The service's error code: the SDK's, else the x-ms-error-code
    header, else the Table service body's odata.error.code."""
    code = getattr(e, "error_code", None)
    if code:
        return code
    resp = getattr(e, "response", None)
    if resp is None:
        return None
    code = resp.headers.get("x-ms-error-code")
    if code:
        return code
    try:
        return json.loads(resp.text())["odata.error"]["code"]
    except Exception:  # noqa: BLE001 - not a Table service body
        return None


def failure(fn, *args, **kwargs):
    """Calls fn, which must fail, and returns how it failed (None when it
    did not)."""
    try:
        fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001
        return describe(e)
    return None


def is_error(err, status, code):
    return err is not None and err.get("status") == status and err.get("code") == code


# ---------------------------------------------------------------- tables

tables = TableServiceClient.from_connection_string(CONN, **NO_RETRY)
table_name = "pyinterop" + SUFFIX
table = tables.get_table_client(table_name)


@step("tables.create")
def _(expect):
    tables.create_table(table_name)
    again = failure(tables.create_table, table_name)
    names = [t.name for t in tables.query_tables(f"TableName eq '{table_name}'")]
    expect(is_error(again, 409, "TableAlreadyExists"), f"creating it again is 409 TableAlreadyExists, got {again}")
    expect(names == [table_name], f"the table is listed, got {names}")
    return {"again": again, "listed": len(names)}


EDM = {
    "PartitionKey": "p1",
    "RowKey": "edm",
    "String": "Grüße, 世界 🌍",
    "Empty": "",
    "Int32": 42,
    "Int32Neg": -7,
    "Int64": EntityProperty(2**53 + 1, EdmType.INT64),
    "Int64Min": EntityProperty(-(2**63), EdmType.INT64),
    "Double": 3.0,
    "DoubleFrac": 0.1,
    "DoubleNaN": float("nan"),
    "DoubleInf": float("-inf"),
    "BoolTrue": True,
    "BoolFalse": False,
    "DateTime": datetime.datetime(2024, 2, 29, 12, 34, 56, 123456, tzinfo=datetime.timezone.utc),
    "Guid": uuid.UUID("c9da6455-213d-42c9-9a79-3e9149a57833"),
    "Binary": b"\x00\x01\x02\xfd\xfe\xff",
}


@step("tables.edm")
def _(expect):
    table.create_entity(EDM)
    got = table.get_entity("p1", "edm")
    saw = {}
    for k, want in EDM.items():
        v = got.get(k)
        if isinstance(want, EntityProperty):
            ok = isinstance(v, EntityProperty) and v.value == want.value and v.edm_type == want.edm_type
        elif isinstance(want, float) and want != want:
            ok = isinstance(v, float) and v != v
        elif isinstance(want, bool):
            ok = v is want
        elif isinstance(want, float):
            ok = isinstance(v, float) and v == want
        elif isinstance(want, int):
            ok = type(v) is int and v == want
        elif isinstance(want, datetime.datetime):
            ok = isinstance(v, datetime.datetime) and v == want
        elif isinstance(want, bytes):
            ok = isinstance(v, bytes) and v == want
        else:
            ok = v == want
        saw[k] = repr(v)
        expect(ok, f"{k}: wrote {want!r}, read back {v!r}")
    expect(set(got.keys()) == set(EDM.keys()), f"the properties read back are those written, got {sorted(got.keys())}")
    expect(re.fullmatch(r'W/"datetime\'[^\']+\'"', got.metadata.get("etag", "")), f"an ETag of Azure's form, got {got.metadata}")
    # A filter on each typed value finds the entity.
    for filt, params in [
        ("Int64 eq @v", {"v": EDM["Int64"].value}),
        ("DateTime eq @v", {"v": EDM["DateTime"]}),
        ("Guid eq @v", {"v": EDM["Guid"]}),
        ("Double eq @v and DoubleFrac lt 0.2", {"v": 3.0}),
        ("Binary eq @v", {"v": EDM["Binary"]}),
        ("BoolTrue eq true and Int32 ge 42", {}),
    ]:
        rows = [e["RowKey"] for e in table.query_entities(f"PartitionKey eq 'p1' and {filt}", parameters=params)]
        expect(rows == ["edm"], f"the filter {filt} finds the entity, got {rows}")
    return saw


@step("tables.staleETag")
def _(expect):
    e = table.create_entity({"PartitionKey": "p1", "RowKey": "cond", "N": 1})
    old = e["etag"]
    table.update_entity({"PartitionKey": "p1", "RowKey": "cond", "N": 2}, mode=UpdateMode.MERGE,
                        etag=old, match_condition=MatchConditions.IfNotModified)
    merge = failure(table.update_entity, {"PartitionKey": "p1", "RowKey": "cond", "N": 3}, mode=UpdateMode.MERGE,
                    etag=old, match_condition=MatchConditions.IfNotModified)
    replace = failure(table.update_entity, {"PartitionKey": "p1", "RowKey": "cond", "N": 4}, mode=UpdateMode.REPLACE,
                      etag=old, match_condition=MatchConditions.IfNotModified)
    delete = failure(table.delete_entity, "p1", "cond", etag=old, match_condition=MatchConditions.IfNotModified)
    n = table.get_entity("p1", "cond")["N"]
    for what, err in [("merge", merge), ("replace", replace), ("delete", delete)]:
        expect(is_error(err, 412, "UpdateConditionNotSatisfied"), f"a {what} with a stale ETag is 412 UpdateConditionNotSatisfied, got {err}")
    expect(n == 2, f"only the first update applied, N={n}")
    insert = failure(table.create_entity, {"PartitionKey": "p1", "RowKey": "cond"})
    expect(is_error(insert, 409, "EntityAlreadyExists"), f"an insert of an existing entity is 409 EntityAlreadyExists, got {insert}")
    return {"merge": merge, "replace": replace, "delete": delete, "insert": insert, "N": n}


@step("tables.paging")
def _(expect):
    for start in range(0, 300, 100):
        table.submit_transaction([("create", {"PartitionKey": "page", "RowKey": f"r{i:03d}", "I": i}) for i in range(start, start + 100)])
    pages = table.query_entities("PartitionKey eq 'page'", results_per_page=37).by_page()
    sizes, keys, token_at = [], [], None
    for page in pages:
        rows = list(page)
        sizes.append(len(rows))
        keys += [r["RowKey"] for r in rows]
        if len(sizes) == 3:
            token_at = pages.continuation_token
            break
    resumed = table.query_entities("PartitionKey eq 'page'", results_per_page=37).by_page(continuation_token=token_at)
    for page in resumed:
        rows = list(page)
        sizes.append(len(rows))
        keys += [r["RowKey"] for r in rows]
    expect(keys == [f"r{i:03d}" for i in range(300)], f"300 rows in order, each once (got {len(keys)})")
    expect(sizes == [37] * 8 + [4], f"pages of 37 (the last 4), got {sizes}")
    selected = [sorted(e.keys()) for e in table.query_entities("PartitionKey eq 'page' and I ge 298", select=["I"])]
    expect(selected == [["I"], ["I"]], f"$select returns the property chosen alone, got {selected}")
    return {"pages": sizes, "resumedAfter": 3, "selected": selected}


@step("tables.transaction")
def _(expect):
    table.create_entity({"PartitionKey": "tx", "RowKey": "t1", "A": "one"})
    ok = table.submit_transaction([
        ("create", {"PartitionKey": "tx", "RowKey": "t0", "A": "zero"}),
        ("upsert", {"PartitionKey": "tx", "RowKey": "t2", "A": "two"}),
        ("update", {"PartitionKey": "tx", "RowKey": "t1", "A": "uno"}, {"mode": "replace"}),
    ])
    expect(len(ok) == 3 and all("etag" in r for r in ok), f"each operation's answer has an ETag, got {ok}")
    # The second operation fails: nothing of the transaction applies.
    err = None
    try:
        table.submit_transaction([
            ("create", {"PartitionKey": "tx", "RowKey": "t3", "A": "three"}),
            ("create", {"PartitionKey": "tx", "RowKey": "t0", "A": "again"}),
            ("delete", {"PartitionKey": "tx", "RowKey": "t2"}),
        ])
    except TableTransactionError as e:
        err = {"status": e.status_code, "code": e.error_code, "index": getattr(e, "index", None)}
    after = {e["RowKey"]: e["A"] for e in table.query_entities("PartitionKey eq 'tx'")}
    expect(err is not None and err["status"] == 409 and err["code"] == "EntityAlreadyExists",
           f"the transaction fails with 409 EntityAlreadyExists, got {err}")
    expect(err is not None and err["index"] == 1, f"the error names operation 1, got {err}")
    expect(after == {"t0": "zero", "t1": "uno", "t2": "two"}, f"the failed transaction applied nothing, got {after}")
    cross = failure(table.submit_transaction, [("create", {"PartitionKey": "a", "RowKey": "1"}), ("create", {"PartitionKey": "b", "RowKey": "1"})])
    expect(cross is not None, "a transaction over two partitions is refused")
    return {"error": err, "after": after, "crossPartition": cross}


@step("tables.limits")
def _(expect):
    # 252 properties of one's own are allowed, 253 are not.
    wide = {"PartitionKey": "lim", "RowKey": "w252", **{f"P{i}": i for i in range(252)}}
    table.create_entity(wide)
    back = table.get_entity("lim", "w252")
    expect(len(back) == 254, f"252 properties and the keys read back, got {len(back)}")
    over = failure(table.create_entity, {"PartitionKey": "lim", "RowKey": "w253", **{f"P{i}": i for i in range(253)}})
    expect(over is not None and over.get("status") == 400 and over.get("code") == "TooManyProperties",
           f"253 properties are 400 TooManyProperties, got {over}")
    # Strings are stored as UTF-16: 16 of 32,000 characters are 1,024,000
    # bytes, under 1 MiB with the keys; 17 are over it.
    big = "x" * 32000
    table.create_entity({"PartitionKey": "lim", "RowKey": "fits", **{f"S{i}": big for i in range(16)}})
    too = failure(table.create_entity, {"PartitionKey": "lim", "RowKey": "over", **{f"S{i}": big for i in range(17)}})
    expect(too is not None and too.get("status") in (400, 413) and too.get("code") in ("EntityTooLarge", "RequestBodyTooLarge"),
           f"an entity over 1 MiB is refused with EntityTooLarge, got {too}")
    missing = failure(table.get_entity, "lim", "over")
    expect(is_error(missing, 404, "ResourceNotFound"), f"the refused entity was not stored, got {missing}")
    return {"over252": over, "over1MiB": too}


@step("tables.sasPartition")
def _(expect):
    table.create_entity({"PartitionKey": "sas", "RowKey": "in", "A": "inside"})
    table.create_entity({"PartitionKey": "other", "RowKey": "out", "A": "outside"})
    sas = generate_table_sas(AzureNamedKeyCredential(ACCOUNT, KEY), table_name,
                             permission=TableSasPermissions(read=True),
                             expiry=datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1),
                             start_pk="sas", end_pk="sas")
    client = TableClient(TABLE_ENDPOINT, table_name, credential=AzureSasCredential(sas), **NO_RETRY)
    inside = client.get_entity("sas", "in")["A"]
    listed = [e["RowKey"] for e in client.query_entities("PartitionKey eq 'sas'")]
    outside = failure(client.get_entity, "other", "out")
    write = failure(client.upsert_entity, {"PartitionKey": "sas", "RowKey": "in", "A": "changed"})
    expect(inside == "inside" and listed == ["in"], f"the SAS reads its partition, got {inside}, {listed}")
    expect(outside is not None and outside.get("status") in (403, 404), f"a read outside the partition is refused, got {outside}")
    expect(outside is not None and outside.get("status") == 403, f"a read outside the partition is 403, got {outside}")
    expect(write is not None and write.get("status") == 403, f"a write with a read-only SAS is 403, got {write}")
    return {"inside": inside, "outside": outside, "write": write}


@step("tables.delete")
def _(expect):
    tables.delete_table(table_name)
    gone = failure(table.get_entity, "p1", "edm")
    expect(is_error(gone, 404, "TableNotFound"), f"a read of a deleted table is 404 TableNotFound, got {gone}")
    return {"after": gone}


# ---------------------------------------------------------------- queues

queues = QueueServiceClient.from_connection_string(CONN, **NO_RETRY)
queue_name = "pyinterop-" + SUFFIX
queue = queues.get_queue_client(queue_name)


@step("queues.messages")
def _(expect):
    queue.create_queue(metadata={"lower": "1", "MixedCase": "2"})
    sent = queue.send_message("héllo wörld <&> 🌍")
    queue.send_message("second")
    peeked = queue.peek_messages(max_messages=5)
    expect([m.content for m in peeked] == ["héllo wörld <&> 🌍", "second"] and all(m.dequeue_count == 0 for m in peeked),
           f"peek shows both, never dequeued, got {[(m.content, m.dequeue_count) for m in peeked]}")
    got = queue.receive_message(visibility_timeout=30)
    expect(got is not None and got.id == sent.id and got.dequeue_count == 1, f"receive returns the first, dequeued once, got {got}")
    old_receipt = got.pop_receipt
    updated = queue.update_message(got, pop_receipt=old_receipt, content="updated ✓", visibility_timeout=0)
    expect(updated.pop_receipt and updated.pop_receipt != old_receipt, "update gives a new pop receipt")
    stale = failure(queue.delete_message, got.id, old_receipt)
    expect(stale is not None and stale.get("status") in (400, 404), f"a delete with the stale pop receipt is refused, got {stale}")
    stale_update = failure(queue.update_message, got.id, pop_receipt=old_receipt, content="x", visibility_timeout=0)
    expect(stale_update is not None and stale_update.get("status") in (400, 404),
           f"an update with the stale pop receipt is refused, got {stale_update}")
    # Both are visible again; a queue does not promise their order.
    both = {m.content: m for m in queue.receive_messages(messages_per_page=32, visibility_timeout=30)}
    again = both.get("updated ✓")
    expect(set(both) == {"updated ✓", "second"} and again is not None and again.id == sent.id and again.dequeue_count == 2,
           f"the updated message is received again, got {both}")
    queue.delete_message(again)
    queue.update_message(both["second"], visibility_timeout=0)
    count = queue.get_queue_properties().approximate_message_count
    expect(count == 1, f"one message is left, got {count}")
    queue.clear_messages()
    after = queue.get_queue_properties().approximate_message_count
    expect(after == 0 and queue.peek_messages() == [], f"clear empties the queue, count {after}")
    return {"stale": stale, "staleUpdate": stale_update, "count": count, "afterClear": after}


@step("queues.metadataCase")
def _(expect):
    md = queue.get_queue_properties().metadata
    expect(md == {"lower": "1", "MixedCase": "2"}, f"queue metadata reads back as written, got {md}")
    queue.set_queue_metadata({"camelCase": "3"})
    md2 = queue.get_queue_properties().metadata
    expect(md2 == {"camelCase": "3"}, f"queue metadata set again reads back as written, got {md2}")
    listed = [q.metadata for q in queues.list_queues(name_starts_with=queue_name, include_metadata=True)]
    expect(listed == [{"camelCase": "3"}], f"the listing shows the metadata as written, got {listed}")
    queue.delete_queue()
    return {"metadata": md, "set": md2, "listed": listed}


# ---------------------------------------------------------------- blobs

blobs = BlobServiceClient.from_connection_string(CONN, **NO_RETRY)
container_name = "pyinterop-" + SUFFIX
container = blobs.get_container_client(container_name)


@step("blobs.stagedBlocks")
def _(expect):
    container.create_container(metadata={"lower": "1", "MixedCase": "2"})
    blob = container.get_blob_client("big.bin")
    parts = [bytes([i]) * (1024 * 1024) for i in range(3)]
    ids = [base64.b64encode(f"block-{i:04d}".encode()).decode() for i in range(3)]
    for block_id, data in zip(ids, parts):
        blob.stage_block(block_id, data)
    committed, uncommitted = blob.get_block_list("all")
    expect(len(committed) == 0 and len(uncommitted) == 3, f"three blocks staged, none committed, got {len(committed)}, {len(uncommitted)}")
    blob.commit_block_list([BlobBlock(block_id=i) for i in ids])
    props = blob.get_blob_properties()
    expect(props.size == 3 * 1024 * 1024 and props.blob_type == "BlockBlob", f"a 3 MiB block blob, got {props.size} {props.blob_type}")
    mid = blob.download_blob(offset=1024 * 1024 - 2, length=4).readall()
    tail = blob.download_blob(offset=3 * 1024 * 1024 - 3).readall()
    whole = blob.download_blob().readall()
    expect(mid == b"\x00\x00\x01\x01", f"a range across two blocks, got {mid!r}")
    expect(tail == b"\x02\x02\x02", f"a range to the end, got {tail!r}")
    expect(whole == b"".join(parts), "the whole blob reads back")
    committed, _ = blob.get_block_list("committed")
    return {"size": props.size, "blocks": len(committed)}


@step("blobs.noOverwrite")
def _(expect):
    blob = container.get_blob_client("once.txt")
    blob.upload_blob(b"first")
    again = failure(blob.upload_blob, b"second", overwrite=False)
    expect(is_error(again, 409, "BlobAlreadyExists"), f"an upload without overwrite of an existing blob is 409 BlobAlreadyExists, got {again}")
    blob.upload_blob(b"third", overwrite=True)
    body = blob.download_blob().readall()
    expect(body == b"third", f"an upload with overwrite replaces it, got {body!r}")
    return {"again": again}


@step("blobs.listings")
def _(expect):
    for name in ["logs/2024/a.txt", "logs/2024/b.txt", "logs/2025/c.txt", "logs/top.txt", "other.txt"]:
        container.upload_blob(name, name.encode())
    flat = [b.name for b in container.list_blobs(name_starts_with="logs/")]
    expect(flat == ["logs/2024/a.txt", "logs/2024/b.txt", "logs/2025/c.txt", "logs/top.txt"], f"a prefix listing, got {flat}")
    walk = [b.name for b in container.walk_blobs(name_starts_with="logs/", delimiter="/")]
    expect(walk == ["logs/2024/", "logs/2025/", "logs/top.txt"], f"a delimiter listing, got {walk}")
    paged = [[b.name for b in page] for page in container.list_blobs(name_starts_with="logs/", results_per_page=3).by_page()]
    expect(paged == [["logs/2024/a.txt", "logs/2024/b.txt", "logs/2025/c.txt"], ["logs/top.txt"]], f"pages of 3, got {paged}")
    return {"flat": flat, "walk": walk, "pages": [len(p) for p in paged]}


@step("blobs.append")
def _(expect):
    blob = container.get_blob_client("log.txt")
    blob.create_append_blob()
    offsets = [blob.append_block(chunk)["blob_append_offset"] for chunk in [b"abc", "déf".encode(), b"g"]]
    props = blob.get_blob_properties()
    body = blob.download_blob().readall().decode()
    expect(offsets == ["0", "3", "7"], f"each block's offset, got {offsets}")
    expect(body == "abcdéfg" and props.blob_type == "AppendBlob", f"the appended blob, got {body!r} {props.blob_type}")
    return {"offsets": offsets, "committedBlocks": props.append_blob_committed_block_count}


@step("blobs.sas")
def _(expect):
    sas = generate_blob_sas(ACCOUNT, container_name, "once.txt", account_key=KEY,
                            permission=BlobSasPermissions(read=True),
                            expiry=datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1))
    client = BlobClient.from_blob_url(f"{BLOB_ENDPOINT}/{container_name}/once.txt?{sas}", **NO_RETRY)
    body = client.download_blob().readall()
    put = failure(client.upload_blob, b"by sas", overwrite=True)
    other = BlobClient.from_blob_url(f"{BLOB_ENDPOINT}/{container_name}/log.txt?{sas}", **NO_RETRY)
    elsewhere = failure(other.download_blob)
    expect(body == b"third", f"the SAS reads its blob, got {body!r}")
    expect(put is not None and put.get("status") == 403, f"a write with a read SAS is 403, got {put}")
    expect(elsewhere is not None and elsewhere.get("status") == 403, f"the SAS reads no other blob, got {elsewhere}")
    return {"put": put, "elsewhere": elsewhere}


@step("blobs.metadataCase")
def _(expect):
    cmd = container.get_container_properties().metadata
    expect(cmd == {"lower": "1", "MixedCase": "2"}, f"container metadata reads back as written, got {cmd}")
    blob = container.get_blob_client("meta.txt")
    blob.upload_blob(b"m", metadata={"k": "v", "MixedCase": "x"})
    bmd = blob.get_blob_properties().metadata
    expect(bmd == {"k": "v", "MixedCase": "x"}, f"blob metadata reads back as written, got {bmd}")
    blob.set_blob_metadata({"camelCase": "y"})
    bmd2 = blob.get_blob_properties().metadata
    expect(bmd2 == {"camelCase": "y"}, f"blob metadata set again reads back as written, got {bmd2}")
    listed = [b.metadata for b in container.list_blobs(name_starts_with="meta.txt", include=["metadata"])]
    expect(listed == [{"camelCase": "y"}], f"the listing shows the metadata as written, got {listed}")
    container.set_container_metadata({"Owner": "py"})
    cmd2 = container.get_container_properties().metadata
    expect(cmd2 == {"Owner": "py"}, f"container metadata set again reads back as written, got {cmd2}")
    return {"container": cmd, "blob": bmd, "blobSet": bmd2, "listed": listed, "containerSet": cmd2}


@step("blobs.leases")
def _(expect):
    blob = container.get_blob_client("leased.txt")
    blob.upload_blob(b"v1")
    lease = blob.acquire_lease(lease_duration=15)
    second = failure(blob.acquire_lease, lease_duration=15)
    expect(is_error(second, 409, "LeaseAlreadyPresent"), f"a second lease is 409 LeaseAlreadyPresent, got {second}")
    without = failure(blob.upload_blob, b"v2", overwrite=True)
    expect(is_error(without, 412, "LeaseIdMissing"), f"a write without the lease is 412 LeaseIdMissing, got {without}")
    blob.upload_blob(b"v3", overwrite=True, lease=lease)
    held = blob.get_blob_properties().lease
    expect((held.state, held.status, held.duration) == ("leased", "locked", "fixed"), f"the lease shows in the properties, got {held}")
    lease.renew()
    lease.release()
    blob.upload_blob(b"v4", overwrite=True)
    body = blob.download_blob().readall()
    expect(body == b"v4", f"a write once the lease is released, got {body!r}")
    return {"second": second, "without": without, "held": [held.state, held.status, held.duration]}


@step("blobs.copy")
def _(expect):
    src = container.get_blob_client("once.txt")
    dst = container.get_blob_client("copy.txt")
    started = dst.start_copy_from_url(src.url)
    props = dst.get_blob_properties()
    body = dst.download_blob().readall()
    expect(started["copy_status"] == "success", f"a copy within the account is complete when it answers, got {started['copy_status']}")
    expect(props.copy.status == "success" and props.copy.id == started["copy_id"], f"the copy's properties, got {props.copy.status} {props.copy.id}")
    expect(body == b"third", f"the copy reads as its source, got {body!r}")
    snap = src.create_snapshot()
    src.upload_blob(b"fourth", overwrite=True)
    old = container.get_blob_client("once.txt", snapshot=snap["snapshot"]).download_blob().readall()
    expect(old == b"third", f"the snapshot reads as the blob was, got {old!r}")
    refused = failure(src.delete_blob)
    expect(is_error(refused, 409, "SnapshotsPresent"), f"deleting a blob with snapshots is 409 SnapshotsPresent, got {refused}")
    src.delete_blob(delete_snapshots="include")
    return {"status": started["copy_status"], "snapshot": snap["snapshot"], "refused": refused}


@step("blobs.deleteContainer")
def _(expect):
    container.delete_container()
    gone = failure(container.get_container_properties)
    expect(gone is not None and gone.get("status") == 404, f"the container is gone, got {gone}")
    return {"after": gone}


sys.exit(1 if failures else 0)
