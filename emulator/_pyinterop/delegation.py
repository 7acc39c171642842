"""delegation.py drives the Azure SDK for Python (Debian's python3-azure)
through user delegation SAS as a key-less application does: with a bearer
token (a TokenCredential handing out unsigned JWTs with Microsoft Entra
ID's claims, which --oauth basic checks without the signature) it gets a
user delegation key, signs a blob SAS with generate_blob_sas(
user_delegation_key=...), reads the blob through it, and is refused what
the SAS does not allow and a read once the key has expired.
emulator/pydelegation_test.go runs it against tablekit's emulator and
against Azurite 3.37, both over HTTPS with --oauth basic:

    REQUESTS_CA_BUNDLE=DIR/ca.pem TABLEKIT_CONNECTION_STRING='...;BlobEndpoint=https://...' \\
        TABLEKIT_TARGET=emulator python3 emulator/_pyinterop/delegation.py

TABLEKIT_TARGET names the service: "emulator" answers as Azure does;
"azurite" is held to Azurite's known departures (AZURITE below). Time
passes for the expired key as the target allows: on the emulator (file
descriptor 3 open) the script asks the test to move the emulator's clock
(it writes "advance DURATION" there and reads a line back on stdin); on
Azurite it takes a key that expires two seconds ahead and waits.

One JSON line per step on stdout (steps.py); exit 1 when a step is not
ok, 2 when it cannot start.
"""

import base64
import datetime
import json
import os
import sys
import time
import uuid

from steps import connection, failed, step

try:
    from azure.core.credentials import AccessToken, AzureNamedKeyCredential
    from azure.core.exceptions import HttpResponseError
    from azure.storage.blob import BlobClient, BlobSasPermissions, BlobServiceClient, generate_blob_sas
except ImportError as e:
    print(f"delegation.py: {e}: install Debian's python3-azure (apt-get install python3-azure)", file=sys.stderr)
    sys.exit(2)

_, FIELDS = connection("delegation.py", ("AccountKey",), https=("BlobEndpoint",))
URL, KEY = FIELDS["BlobEndpoint"].rstrip("/"), FIELDS["AccountKey"]
TARGET = os.environ.get("TABLEKIT_TARGET", "")
if TARGET not in ("emulator", "azurite"):
    print("delegation.py: set TABLEKIT_TARGET (emulator or azurite)", file=sys.stderr)
    sys.exit(2)
ACCOUNT = URL.rsplit("/", 1)[1]

OID = "5f4b6d2e-0c1a-4e8f-9b3d-7a6c5e4d3b2a"
TID = "72f988bf-86f1-41af-91ab-2d7cd011db47"

# What each refusal is: Azure's answer (and the emulator's), and where
# Azurite 3.37 answers otherwise. A SAS whose signature does not match
# (another blob's) and a key past its expiry are both Azure's 403
# AuthenticationFailed ("Server failed to authenticate the request"), as
# for a service SAS; Azurite answers 403 AuthorizationFailure to both.
AZURE = {"write": [403, "AuthorizationPermissionMismatch"], "delete": [403, "AuthorizationPermissionMismatch"],
         "otherBlob": [403, "AuthenticationFailed"], "expired": [403, "AuthenticationFailed"],
         "sharedKey": [403, "AuthenticationFailed"]}
AZURITE = dict(AZURE, otherBlob=[403, "AuthorizationFailure"], expired=[403, "AuthorizationFailure"])
WANT = AZURE if TARGET == "emulator" else AZURITE


def b64url(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


class EntraToken:
    """A TokenCredential: unsigned JWTs for the scope asked, naming OID in TID."""

    def get_token(self, *scopes, **kwargs):
        now = int(time.time())
        claims = {"aud": scopes[0].removesuffix("/.default"), "iss": f"https://sts.windows.net/{TID}/",
                  "iat": now - 3600, "nbf": now - 3600, "exp": now + 3600, "oid": OID, "tid": TID}
        tok = b64url(b'{"alg":"RS256","typ":"JWT"}') + "." + b64url(json.dumps(claims).encode()) + "."
        return AccessToken(tok, now + 3600)


def utcnow():
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)


def refusal(call):
    """The status and error code call is refused with, or "accepted"."""
    try:
        call()
        return "accepted"
    except HttpResponseError as e:
        return [e.status_code, e.error_code]


def advance(seconds):
    """Moves the emulator's clock (through the test), or waits on Azurite."""
    if TARGET == "azurite":
        time.sleep(seconds)
        return
    with os.fdopen(3, "w", closefd=False) as clock:
        clock.write(f"advance {seconds}s\n")
        clock.flush()
    answer = sys.stdin.readline().strip()
    if not answer.startswith("now "):
        raise RuntimeError(f"the clock did not move: {answer!r}")


service = BlobServiceClient(URL, credential=EntraToken())
container = service.get_container_client("pydelegation" + uuid.uuid4().hex[:8])
state = {}


def sas_for(blob, key, expiry):
    return generate_blob_sas(ACCOUNT, container.container_name, blob, user_delegation_key=key,
                             permission=BlobSasPermissions(read=True), expiry=expiry)


def key():
    """A bearer token gets a key naming its oid and tid; Shared Key does not."""
    now = utcnow()
    k = service.get_user_delegation_key(now - datetime.timedelta(minutes=5), now + datetime.timedelta(hours=1))
    state["key"] = k
    problems = []
    if k.signed_oid != OID or k.signed_tid != TID:
        problems.append(f"the key names {k.signed_oid} in {k.signed_tid}, want the token's {OID} in {TID}")
    if k.signed_service != "b" or not k.signed_version:
        problems.append(f"SignedService {k.signed_service!r}, SignedVersion {k.signed_version!r}, want b and a version")
    if len(base64.b64decode(k.value)) != 32:
        problems.append("the key's value is not 32 bytes of base64")
    by_key = BlobServiceClient(URL, credential=AzureNamedKeyCredential(ACCOUNT, KEY))
    now = utcnow()
    shared = refusal(lambda: by_key.get_user_delegation_key(now, now + datetime.timedelta(hours=1)))
    if shared != WANT["sharedKey"]:
        problems.append(f"Get User Delegation Key with Shared Key: {shared}, want {WANT['sharedKey']}")
    return problems, {"signed_start": str(k.signed_start), "signed_version": k.signed_version, "shared_key": shared}


def read():
    """The SAS reads the blob."""
    container.create_container()
    container.upload_blob("a.txt", b"through a user delegation SAS")
    container.upload_blob("b.txt", b"another blob")
    sas = sas_for("a.txt", state["key"], utcnow() + datetime.timedelta(hours=1))
    state["sas"] = sas
    got = BlobClient.from_blob_url(f"{container.url}/a.txt?{sas}").download_blob().readall()
    return ([] if got == b"through a user delegation SAS" else [f"read {got!r}"]), {"sas_fields": sorted(k for k in
                                                                                   (kv.split("=")[0] for kv in sas.split("&")) if k != "sig")}


def refused():
    """A read SAS writes and deletes nothing, and reads no other blob."""
    sas = state["sas"]
    mine = BlobClient.from_blob_url(f"{container.url}/a.txt?{sas}")
    saw = {"write": refusal(lambda: mine.upload_blob(b"overwritten", overwrite=True)),
           "delete": refusal(lambda: mine.delete_blob()),
           "otherBlob": refusal(lambda: BlobClient.from_blob_url(f"{container.url}/b.txt?{sas}").download_blob().readall())}
    problems = [f"{k}: {v}, want {WANT[k]}" for k, v in saw.items() if v != WANT[k]]
    return problems, saw


def expired():
    """A key past its expiry signs nothing, though the SAS has not expired."""
    now = utcnow()
    ahead = 2 if TARGET == "azurite" else 600
    k = service.get_user_delegation_key(now - datetime.timedelta(minutes=5), now + datetime.timedelta(seconds=ahead))
    blob = BlobClient.from_blob_url(f"{container.url}/a.txt?{sas_for('a.txt', k, now + datetime.timedelta(hours=1))}")
    problems = []
    if blob.download_blob().readall() != b"through a user delegation SAS":
        problems.append("the short-lived key did not read while valid")
    # Past the key's expiry (whole seconds, as SignedExpiry says it),
    # with a second to spare.
    key_expiry = datetime.datetime.strptime(str(k.signed_expiry), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
    advance(max(0.0, (key_expiry - datetime.datetime.now(datetime.timezone.utc)).total_seconds()) + 0.5)
    saw = refusal(lambda: blob.download_blob().readall())
    if saw != WANT["expired"]:
        problems.append(f"a read after the key expired: {saw}, want {WANT['expired']}")
    return problems, {"after_expiry": saw}


step("delegation.key", key)
step("delegation.read", read)
step("delegation.refused", refused)
step("delegation.expired", expired)
try:
    container.delete_container()
except HttpResponseError:
    pass
sys.exit(1 if failed() else 0)
