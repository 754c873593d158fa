"""How long a test waits for a command, a process or a file.

A wait in a test is a guard against a hang, never a measure of speed: the suite must pass
on a loaded machine (shared nodes, laptops, two other jobs on two cores), where a command
that compiles kernels cold can take ten times its idle time. Every subprocess timeout and
every polling loop of the tests waits :data:`PATIENCE` seconds (an hour by default;
``GRANULAR_TEST_PATIENCE`` sets it), and no test asserts on elapsed time.
"""

import os
import time

PATIENCE = float(os.environ.get("GRANULAR_TEST_PATIENCE", "3600"))


def wait_until(ready, proc=None, poll=0.02) -> bool:
    """Poll ``ready()`` until it is true (True), or until ``proc`` has ended or
    :data:`PATIENCE` has passed without it (False)."""
    t0 = time.monotonic()
    while not ready():
        if (proc is not None and proc.poll() is not None) or time.monotonic() - t0 > PATIENCE:
            return ready()
        time.sleep(poll)
    return True
