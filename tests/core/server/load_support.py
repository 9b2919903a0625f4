"""wrk as the load of the process-management tests: started before the
event under test, stopped (SIGINT, which makes it print its summary) after,
and its errors counted."""
import re
import shutil
import signal
import subprocess

import m0test


class Wrk:
    """wrk on one URL until stop(). Each request on a connection of its own
    (`Connection: close`): what is under test is that no connection is
    refused or reset while processes come and go. A keep-alive connection a
    draining process closes between two requests is HTTP's normal end of an
    idle connection, which a client retries, and wrk would count it."""

    def __init__(self, port, path="/hello", connections=8, scheme="http"):
        binary = shutil.which("wrk")
        assert binary, "wrk is not installed (scripts/setup installs it)"
        # A request waits as long as it must on a busy machine: only refused,
        # reset or failed requests count here, never slow ones.
        self.proc = subprocess.Popen(
            [binary, "-t1", f"-c{connections}", "-d600s", f"--timeout={int(m0test.scaled(60))}s",
             "-H", "Connection: close", f"{scheme}://127.0.0.1:{port}{path}"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.output = ""

    def stop(self):
        """Stops wrk; returns (requests, errors) where errors lists what
        wrk reported as failed (socket errors, non-2xx/3xx responses)."""
        self.proc.send_signal(signal.SIGINT)
        self.output, _ = self.proc.communicate(timeout=m0test.scaled(60))
        done = re.search(r"(\d+) requests in", self.output)
        assert done, self.output
        errors = []
        socket_errors = re.search(r"Socket errors: (.*)", self.output)
        if socket_errors:
            errors.append("socket errors: " + socket_errors.group(1))
        non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", self.output)
        if non_2xx:
            errors.append(f"{non_2xx.group(1)} non-2xx/3xx responses")
        return int(done.group(1)), errors

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def line_count(path):
    try:
        with open(path, "rb") as f:
            return sum(1 for _ in f)
    except OSError:
        return 0


def wait_for_requests(server, access_log, more):
    """Waits until `more` requests were logged to `access_log` since now."""
    start = line_count(access_log)
    server.wait_until(lambda: line_count(access_log) >= start + more, what=f"{more} more requests")


def under_load(server, access_log, during):
    """Runs `during()` while wrk loads `server` (once some requests went
    through before and after it), then checks that no request failed."""
    wrk = Wrk(server.port)
    try:
        wait_for_requests(server, access_log, 200)
        during()
        wait_for_requests(server, access_log, 100)
        requests, errors = wrk.stop()
    finally:
        wrk.kill()
    assert requests > 0 and not errors, wrk.output + "\nm0's log:\n" + server.output()


def one_replacement_at_a_time(log):
    """Checks, from the supervisor's log, that a replacement never started
    while another was under way (from "replacing ... (pid P)" until P exited);
    returns the pids replaced, in order."""
    replaced, under_way = [], None
    for line in log.splitlines():
        started = re.search(r"supervisor: replacing worker process \d+ \(pid (\d+)\)", line)
        if started:
            assert under_way is None, f"pid {started.group(1)} replaced while pid {under_way} was:\n{log}"
            under_way = started.group(1)
            replaced.append(int(under_way))
        ended = re.search(r"supervisor: previous worker process \(pid (\d+)\) exited", line)
        if ended and ended.group(1) == under_way:
            under_way = None
    return replaced
