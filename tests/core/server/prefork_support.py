"""What the prefork tests look at: the processes of a running m0, from /proc."""
import time

import m0test


def children(pid):
    """Pids of the live child processes of `pid`."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split() if alive(int(p))]
    except OSError:
        return []


def state(pid):
    """The state letter of `pid` in /proc (R, S, T for stopped, Z...), or
    None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def alive(pid):
    """True while `pid` runs or is stopped (a zombie is not running)."""
    return state(pid) not in (None, "Z", "X")


def wait_until(condition, timeout=10.0, what="condition"):
    timeout = m0test.scaled(timeout)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def wait_for_children(pid, count, without=()):
    """The `count` live children of `pid` once there are exactly that many
    and none of them is in `without`."""
    def ready():
        found = children(pid)
        return found if len(found) == count and not set(found) & set(without) else None
    return wait_until(ready, what=f"{count} worker processes of {pid}")
