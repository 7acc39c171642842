"""steps.py: the step runner https.py and durable.py share. A step is a
function returning (problems, saw); step() runs it and prints one JSON
line (step, ok, problems, saw, error, trace, ms), the form the Go tests
read. failed() says whether any step so far was not ok.

The Go tests run the scripts through tools/testenv (PyScript, PyCommand):
each is given TABLEKIT_CONNECTION_STRING, TABLEKIT_TARGET (emulator or
azurite), REQUESTS_CA_BUNDLE when the target serves HTTPS, and, where it
moves the emulator's clock, file descriptor 3 (delegation.py)."""

import json
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
