"""https.py drives the Azure SDK for Python (Debian's python3-azure) against
tablekit's emulator served over HTTPS (tablekit emulator --cert ... --oauth
basic; emulator/pyinterop_https_test.go runs it), trusting the emulator's CA
through REQUESTS_CA_BUNDLE as a Python user would:

    REQUESTS_CA_BUNDLE=DIR/ca.pem TABLEKIT_CONNECTION_STRING='...' python3 emulator/_pyinterop/https.py

Steps: Shared Key and a bearer token (a TokenCredential handing out unsigned
JWTs with Microsoft Entra ID's claims, which --oauth basic checks without
the signature) on tables, queues and blobs; an expired token refused 401
InvalidAuthenticationInfo on each. One JSON line per step on stdout, as
interop.py prints them; exit 1 when a step is not ok, 2 when it cannot start.
"""

import base64
import json
import sys
import time
import uuid

from steps import connection, failed, step

try:
    from azure.core.credentials import AccessToken, AzureNamedKeyCredential
    from azure.core.exceptions import HttpResponseError
    from azure.data.tables import TableServiceClient
    from azure.storage.blob import BlobServiceClient
    from azure.storage.queue import QueueServiceClient
except ImportError as e:
    print(f"https.py: {e}: install Debian's python3-azure (apt-get install python3-azure)", file=sys.stderr)
    sys.exit(2)

CONN, FIELDS = connection("https.py", ("AccountName", "AccountKey"), https=("TableEndpoint", "BlobEndpoint", "QueueEndpoint"))


def b64url(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


class EntraToken:
    """A TokenCredential: unsigned JWTs for the scope asked, valid for ttl seconds."""

    def __init__(self, ttl):
        self.ttl = ttl

    def get_token(self, *scopes, **kwargs):
        now = int(time.time())
        claims = {"aud": scopes[0].removesuffix("/.default"),
                  "iss": "https://sts.windows.net/00000000-0000-0000-0000-000000000000/",
                  "iat": now - 3600, "nbf": now - 3600, "exp": now + self.ttl}
        tok = b64url(b'{"alg":"RS256","typ":"JWT"}') + "." + b64url(json.dumps(claims).encode()) + "."
        return AccessToken(tok, now + 3600)


def clients(cred):
    return (TableServiceClient(FIELDS["TableEndpoint"], credential=cred),
            QueueServiceClient(FIELDS["QueueEndpoint"], credential=cred),
            BlobServiceClient(FIELDS["BlobEndpoint"], credential=cred))


def use(cred, name):
    """Creates a table, a queue and a container, writes and reads each."""
    tables, queues, blobs = clients(cred)
    t = tables.create_table(name)
    t.create_entity({"PartitionKey": "p", "RowKey": "r", "N": 1})
    assert t.get_entity("p", "r")["N"] == 1
    q = queues.create_queue(name)
    q.send_message("hello")
    assert [m.content for m in q.receive_messages()] == ["hello"]
    c = blobs.create_container(name)
    c.upload_blob("b", b"hello")
    assert c.download_blob("b").readall() == b"hello"


def refused(cred, name):
    """Each service refuses cred: what Python code sees."""
    tables, queues, blobs = clients(cred)
    saw = {}
    for svc, call in (("table", lambda: tables.create_table(name)),
                      ("queue", lambda: queues.create_queue(name)),
                      ("blob", lambda: blobs.create_container(name))):
        try:
            call()
            saw[svc] = "accepted"
        except HttpResponseError as e:
            saw[svc] = [e.status_code, e.error_code]
    return saw


def suffix():
    return uuid.uuid4().hex[:8]


def shared_key():
    use(AzureNamedKeyCredential(FIELDS["AccountName"], FIELDS["AccountKey"]), "pyhttpskey" + suffix())
    return [], None


def bearer():
    use(EntraToken(3600), "pyhttpstoken" + suffix())
    return [], None


def expired():
    saw = refused(EntraToken(-60), "pyhttpsexpired" + suffix())
    want = [401, "InvalidAuthenticationInfo"]
    return [f"{svc}: {got}, want {want}" for svc, got in saw.items() if got != want], saw


step("https.sharedKey", shared_key)
step("https.bearer", bearer)
step("https.expired", expired)
sys.exit(1 if failed() else 0)
