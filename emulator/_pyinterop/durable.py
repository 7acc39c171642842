"""durable.py checks, from outside and with the Azure SDK for Python
(Debian's python3-azure), that an emulator keeping its data on disk
(`tablekit emulator --location DIR`) loses no write it acknowledged when it
is killed. (Azurite 3.37.0 answers the Table service's Set Service
Properties 400, so the setup fails there.) cmd/tablekit's
TestEmulatorLocationSurvivesSIGKILLPython runs it; by hand:

    TABLEKIT_CONNECTION_STRING='...' python3 emulator/_pyinterop/durable.py load STATE
    # kill the emulator (SIGKILL), start it again on the same location; load again, ...
    TABLEKIT_CONNECTION_STRING='...' python3 emulator/_pyinterop/durable.py check STATE

`load STATE` writes as a Python user's code does, from threads at once,
until the connection breaks (the emulator was killed): entity group
transactions of 100 upserts in one partition (every other one rewriting
the previous one's rows, so a transaction half applied would leave them
mixed), queue messages, block blobs (every other one over 64 KiB, every
third staged in two blocks and committed), appends to one append blob with
an append-position condition, and overwrites of a blob under an infinite
lease. Each write the service acknowledged is appended to STATE (one JSON
line, flushed) once its answer is in; a line {"k": "round"} starts each
run, and the first run also creates the table, the queue, the container,
the append blob and the lease, and sets a CORS rule on the Table and Blob
services (the caller sends the preflight, as a browser would). STATE
accumulates across runs.

`check STATE` reads everything back: every acknowledged transaction is
there whole (or replaced whole by its successor) and no transaction is half
applied; every acknowledged message is in the queue; every acknowledged
blob is there with its content; every acknowledged append is at the
position it was acknowledged at; the lease is still held, so a write
without its ID is 412 LeaseIdMissing, and the leased blob holds the last
acknowledged overwrite or a later one.

One JSON line per step on stdout, as interop.py prints them; exit 1 when a
step is not ok, 2 when the script cannot start.
"""

import hashlib
import json
import sys
import threading
import time

from steps import connection, failed, step

try:
    from azure.core.exceptions import HttpResponseError
    from azure.data.tables import TableCorsRule, TableServiceClient, UpdateMode
    from azure.storage.blob import BlobBlock, BlobServiceClient, CorsRule
    from azure.storage.queue import QueueServiceClient
except ImportError as e:
    print(f"durable.py: {e}: install Debian's python3-azure (apt-get install python3-azure)", file=sys.stderr)
    sys.exit(2)

if len(sys.argv) != 3 or sys.argv[1] not in ("load", "check"):
    print("usage: durable.py load|check STATEFILE", file=sys.stderr)
    sys.exit(2)
CONN, _ = connection("durable.py", ("AccountName", "AccountKey", "TableEndpoint", "BlobEndpoint", "QueueEndpoint"))
MODE, STATE = sys.argv[1], sys.argv[2]

NAME = "durable"        # the table, the queue and the container
LOG = "log"             # the append blob
LEASED = "leased"       # the blob under an infinite lease
LEASE_ID = "6d1d4f4e-2a57-4c8e-9d43-6f0a5b1f7e10"
ORIGIN = "https://durable.example"  # the CORS rule's origin
SIZE = 100              # operations per transaction
TXN_WRITERS, MSG_WRITERS, BLOB_WRITERS = 3, 2, 2

# One try per request: a killed emulator ends a writer at once, and an
# answer is never the second try's (whose first may have landed).
NO_RETRY = {"retry_total": 0}

def services():
    return (TableServiceClient.from_connection_string(CONN, **NO_RETRY),
            QueueServiceClient.from_connection_string(CONN, **NO_RETRY),
            BlobServiceClient.from_connection_string(CONN, **NO_RETRY))


def blob_content(name, n):
    """A blob's content, from its name: every other one past 64 KiB."""
    return ((name + " ") * (1 + n % 2 * 10000)).encode()


def read_state():
    """The state file's complete lines."""
    try:
        with open(STATE, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in text.split("\n")[:-1] if line]


# ---- load ----

class State:
    """The state file, appended to by every writer: one line per
    acknowledged write, flushed before the writer goes on."""

    def __init__(self, path):
        self.f = open(path, "a", encoding="utf-8")
        self.lock = threading.Lock()
        self.counts = {}

    def ack(self, kind, **fields):
        line = json.dumps({"k": kind, **fields}) + "\n"
        with self.lock:
            self.f.write(line)
            self.f.flush()
            self.counts[kind] = self.counts.get(kind, 0) + 1


def load():
    past = read_state()
    rnd = sum(1 for s in past if s["k"] == "round")
    state = State(STATE)
    state.ack("round", round=rnd)
    tables, queues, blobs = services()
    container = blobs.get_container_client(NAME)
    ended = {}  # writer -> how it ended

    def setup():
        if rnd > 0:
            return [], None
        tables.create_table(NAME)
        queues.create_queue(NAME)
        container.create_container()
        container.get_blob_client(LOG).create_append_blob()
        leased = container.get_blob_client(LEASED)
        leased.upload_blob(b"round 0 write -1")
        leased.acquire_lease(lease_duration=-1, lease_id=LEASE_ID)
        tables.set_service_properties(cors=[TableCorsRule([ORIGIN], ["GET", "PUT"])])
        blobs.set_service_properties(cors=[CorsRule([ORIGIN], ["GET", "PUT"])])
        state.ack("setup")
        return [], {"lease": LEASE_ID, "origin": ORIGIN}

    step("load.setup", setup)
    if failed():
        return

    def writer(name, fn):
        def run():
            try:
                fn()
            except Exception as e:  # noqa: BLE001 - the emulator was killed (or failed): say how
                ended[name] = repr(e)[:200]
        t = threading.Thread(target=run, name=name)
        t.start()
        return t

    def transactions(w):
        table = tables.get_table_client(NAME)
        pk = f"r{rnd}w{w}"
        for n in range(10**9):
            # Every other transaction rewrites the last one's rows: a
            # transaction half applied would leave them mixed.
            table.submit_transaction([
                ("upsert", {"PartitionKey": pk, "RowKey": f"b{n // 2 * 2:05d}-{i:03d}", "Batch": n}, {"mode": UpdateMode.REPLACE})
                for i in range(SIZE)])
            state.ack("txn", pk=pk, n=n)

    def messages(w):
        queue = queues.get_queue_client(NAME)
        for n in range(10**9):
            text = f"r{rnd}q{w}-{n}"
            queue.send_message(text)
            state.ack("msg", text=text)

    def block_blobs(w):
        for n in range(10**9):
            name = f"r{rnd}b{w}-{n}"
            data = blob_content(name, n)
            blob = container.get_blob_client(name)
            if n % 3 == 2:  # staged in two blocks, then committed
                half = len(data) // 2
                blob.stage_block("AAAA", data[:half])
                blob.stage_block("AAAB", data[half:])
                blob.commit_block_list([BlobBlock("AAAA"), BlobBlock("AAAB")])
            else:
                blob.upload_blob(data)
            state.ack("blob", name=name, n=n, size=len(data), sha256=hashlib.sha256(data).hexdigest())

    def appends():
        blob = container.get_blob_client(LOG)
        # An append a kill cut off may have landed: start where the blob ends.
        at = blob.get_blob_properties().size
        for n in range(10**9):
            data = f"round {rnd} block {n}\n".encode()
            # The position condition makes a landed append's retry fail
            # instead of appending twice.
            blob.append_block(data, appendpos_condition=at)
            state.ack("append", at=at, data=data.decode())
            at += len(data)

    def lease_writes():
        blob = container.get_blob_client(LEASED)
        for n in range(10**9):
            blob.upload_blob(f"round {rnd} write {n}".encode(), overwrite=True, lease=LEASE_ID)
            state.ack("leased", round=rnd, n=n)

    threads = [writer(f"txn{w}", lambda w=w: transactions(w)) for w in range(TXN_WRITERS)]
    threads += [writer(f"msg{w}", lambda w=w: messages(w)) for w in range(MSG_WRITERS)]
    threads += [writer(f"blob{w}", lambda w=w: block_blobs(w)) for w in range(BLOB_WRITERS)]
    threads += [writer("append", appends), writer("leased", lease_writes)]
    for t in threads:
        t.join()
    # Not a failure: the load ends when the emulator is killed.
    print(json.dumps({"step": "load.round", "ok": True, "saw": {"round": rnd, "acknowledged": state.counts, "ended": ended}}), flush=True)


# ---- check ----

def check():
    acks = read_state()
    if not any(a["k"] == "setup" for a in acks):
        print(f"durable.py: {STATE} holds no acknowledged setup: run load first", file=sys.stderr)
        sys.exit(2)
    tables, queues, blobs = services()
    container = blobs.get_container_client(NAME)

    def of(kind):
        return [a for a in acks if a["k"] == kind]

    def transactions():
        # Each pair of transactions' rows: "PK/bNNNNN" -> Batch -> rows.
        found = {}
        for e in tables.get_table_client(NAME).list_entities(select=["PartitionKey", "RowKey", "Batch"]):
            group = found.setdefault(e["PartitionKey"] + "/" + e["RowKey"][:6], {})
            group[e["Batch"]] = group.get(e["Batch"], 0) + 1
        problems = []
        for k, batches in sorted(found.items()):
            if len(batches) != 1:
                problems.append(f"{k}: rows of transactions {batches}: one was half applied")
            problems += [f"{k}: {rows} rows of transaction {b}, want {SIZE}" for b, rows in batches.items() if rows != SIZE]
        acked = of("txn")
        for a in acked:
            got = found.get(f"{a['pk']}/b{a['n'] // 2 * 2:05d}", {})
            # The acknowledged transaction, or the next one (which
            # replaced its rows), is there whole.
            if got.get(a["n"]) != SIZE and got.get(a["n"] + 1) != SIZE:
                problems.append(f"transaction {a['n']} of {a['pk']} was acknowledged and is lost (found {got})")
        if not acked:
            problems.append("no transaction was acknowledged")
        rewrote = sum(1 for a in acked if a["n"] % 2)
        return problems, {"acknowledged": len(acked), "rewrote": rewrote, "rowGroups": len(found), "rows": sum(sum(b.values()) for b in found.values())}

    def messages():
        queue = queues.get_queue_client(NAME)
        stored = set()
        for m in queue.receive_messages(messages_per_page=32, visibility_timeout=3600):
            stored.add(m.content)
        acked = of("msg")
        problems = [f"message {a['text']} was acknowledged and is lost" for a in acked if a["text"] not in stored]
        if not acked:
            problems.append("no message was acknowledged")
        return problems, {"acknowledged": len(acked), "stored": len(stored)}

    def block_blobs():
        problems, big = [], 0
        acked = of("blob")
        for a in acked:
            try:
                data = container.get_blob_client(a["name"]).download_blob().readall()
            except HttpResponseError as e:
                problems.append(f"blob {a['name']} was acknowledged and is lost: {e.status_code} {e.error_code}")
                continue
            if hashlib.sha256(data).hexdigest() != a["sha256"]:
                problems.append(f"blob {a['name']}: {len(data)} bytes that are not the {a['size']} acknowledged")
            big += len(data) > 64 * 1024
        if not acked:
            problems.append("no blob was acknowledged")
        return problems, {"acknowledged": len(acked), "over64KiB": big}

    def appended():
        data = container.get_blob_client(LOG).download_blob().readall()
        acked = of("append")
        problems = [f"append at {a['at']} ({a['data']!r}) was acknowledged and is not there (found {data[a['at']:a['at'] + len(a['data'])]!r})"
                    for a in acked if data[a["at"]:a["at"] + len(a["data"])] != a["data"].encode()]
        if not acked:
            problems.append("no append was acknowledged")
        end = max((a["at"] + len(a["data"]) for a in acked), default=0)
        return problems, {"acknowledged": len(acked), "acknowledgedBytes": end, "blobBytes": len(data)}

    def lease():
        problems = []
        blob = container.get_blob_client(LEASED)
        held = blob.get_blob_properties().lease
        if (held.state, held.status, held.duration) != ("leased", "locked", "infinite"):
            problems.append(f"the infinite lease is not held: state {held.state}, status {held.status}, duration {held.duration}")
        try:
            blob.upload_blob(b"without the lease", overwrite=True)
            problems.append("a write without the lease ID was accepted")
            refused = None
        except HttpResponseError as e:
            refused = [e.status_code, e.error_code]
            if refused != [412, "LeaseIdMissing"]:
                problems.append(f"a write without the lease ID: {refused}, want [412, 'LeaseIdMissing']")
        body = blob.download_blob().readall().decode()
        words = body.split()
        stored = (int(words[1]), int(words[3])) if len(words) == 4 else None
        acked = of("leased")
        last = max(((a["round"], a["n"]) for a in acked), default=(0, -1))
        if stored is None or stored < last:
            problems.append(f"the leased blob holds {body!r}: older than the last acknowledged write, round {last[0]} write {last[1]}")
        if not acked:
            problems.append("no write under the lease was acknowledged")
        return problems, {"acknowledged": len(acked), "stored": body, "withoutLease": refused}

    step("check.transactions", transactions)
    step("check.messages", messages)
    step("check.blobs", block_blobs)
    step("check.append", appended)
    step("check.lease", lease)


if MODE == "load":
    load()
else:
    check()
sys.exit(1 if failed() else 0)
