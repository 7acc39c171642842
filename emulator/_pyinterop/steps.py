"""steps.py: what the scripts here share. A step is a function returning
(problems, saw); step() runs it and prints one JSON line (step, ok,
problems, saw, error, trace, ms), the form the Go tests read (interop.py
prints the same form itself). failed() says whether any step so far was
not ok; connection() reads the account the script drives.

The Go tests run the scripts through tools/testenv (PyScript, PyCommand):
each is given TABLEKIT_CONNECTION_STRING, TABLEKIT_TARGET (emulator or
azurite), REQUESTS_CA_BUNDLE when the target serves HTTPS, and, where it
moves the emulator's clock, file descriptor 3 (delegation.py)."""

import json
import os
import sys
import time
import traceback

_failed = False


def step(name, fn):
    """Runs fn, which returns (problems, saw), and prints its line."""
    global _failed
    start = time.monotonic()
    out = {"step": name}
    try:
        problems, saw = fn()
        out["ok"] = not problems
        if problems:
            out["problems"] = problems[:20] + ([f"... and {len(problems) - 20} more"] if len(problems) > 20 else [])
        if saw is not None:
            out["saw"] = saw
    except Exception as e:  # noqa: BLE001 - the step failed unexpectedly: say where
        out["ok"] = False
        out["error"] = repr(e)[:500]
        out["trace"] = traceback.format_exc().splitlines()[-6:]
    out["ms"] = int((time.monotonic() - start) * 1000)
    _failed = _failed or not out["ok"]
    print(json.dumps(out), flush=True)


def failed():
    """Whether a step so far was not ok."""
    return _failed


def connection(script, needs, https=()):
    """The account of TABLEKIT_CONNECTION_STRING: the string, and its fields
    by name. The script exits 2, saying what is missing, unless every field
    of needs is there and every field of https is an https:// URL, which the
    script then trusts through REQUESTS_CA_BUNDLE (that must be set too)."""
    conn = os.environ.get("TABLEKIT_CONNECTION_STRING", "")
    fields = dict(kv.split("=", 1) for kv in conn.split(";") if "=" in kv)
    missing = [k + "=" for k in needs if not fields.get(k)]
    missing += [k + "=https://..." for k in https if not fields.get(k, "").startswith("https://")]
    if https and not os.environ.get("REQUESTS_CA_BUNDLE"):
        missing.append("REQUESTS_CA_BUNDLE (the CA of the service's certificate)")
    if missing:
        print(f"{script}: TABLEKIT_CONNECTION_STRING is not set, or lacks " + ", ".join(missing), file=sys.stderr)
        sys.exit(2)
    return conn, fields
