"""Code run in a fresh interpreter whose address space is capped (``RLIMIT_AS``) a little above
what it holds on starting: a build that holds more memory than it should meets MemoryError
there. The code starts after ``PRELUDE``: the package, ``cap(headroom_mb)``, ``snapshot(tape)``
(every table of a tape, to compare before and after a rollback) and ``report(**fields)``, whose
last call is what ``run`` returns."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PRELUDE = """
import json, math, resource, sys
import subgraph_ad as sad

def vm_bytes():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:"))

def cap(headroom_mb):
    limit = vm_bytes() + headroom_mb * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

def snapshot(tape):
    return (len(tape.nodes), hash(tuple(tape.nodes)), hash(tuple(tape.orders)), len(tape._intern),
            hash(tuple(tape.deriv_cache.items())), dict(tape._vars))

def report(**fields):
    print(json.dumps(fields))
"""


def run(code: str) -> dict:
    """``code`` after the prelude in a fresh interpreter; its last line of output, as JSON."""
    done = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(code)], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
