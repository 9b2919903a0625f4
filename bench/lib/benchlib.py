"""Shared helpers for the scripts in bench/: start and stop peers fairly, drive
wrk, print tables.

Peers are started in a session of their own (setsid) with SIGINT and SIGQUIT
reset to their defaults (a background shell may hand them down ignored), and
stopped by process group, never by name.
"""
import os
import re
import resource
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

# Every arm gets the same request headers: header parsing is part of the cost.
BROWSER_HEADERS = [
    ("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"),
    ("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"),
    ("Accept-Language", "en-US,en;q=0.5"),
]

BENCH_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO_DIR = os.path.dirname(BENCH_DIR)
sys.path.insert(0, os.path.join(BENCH_DIR, "thread_cpu"))
import thread_cpu  # noqa: E402

# The peers' venv, made from Debian's Python with bench/requirements.txt.
VENV = os.path.join(BENCH_DIR, ".venv")
VENV_PYTHON = "/usr/bin/python3.11"


def ensure_venv(tools):
    """The bin directory of the bench venv, made (or brought up to
    bench/requirements.txt) when one of `tools` is missing from it or the
    requirements changed since it was last brought up to them."""
    bin_dir = os.path.join(VENV, "bin")
    requirements = os.path.join(BENCH_DIR, "requirements.txt")
    stamp = os.path.join(VENV, ".requirements")
    with open(requirements) as f:
        want = f.read()
    try:
        with open(stamp) as f:
            current = f.read() == want
    except OSError:
        current = False
    if current and all(os.path.exists(os.path.join(bin_dir, t)) for t in tools):
        return bin_dir
    if not os.path.exists(os.path.join(bin_dir, "pip")):
        print(f"creating the bench venv in {VENV} ...", file=sys.stderr)
        subprocess.run([VENV_PYTHON, "-m", "venv", VENV], check=True)
    subprocess.run([os.path.join(bin_dir, "pip"), "install", "-q", "-r", requirements], check=True)
    with open(stamp, "w") as f:
        f.write(want)
    return bin_dir


def build_client(name, compiler="c++"):
    """The path of the load generator bench/clients/<name>.cpp, compiled
    (header-only Asio and Beast, -O2) into build/bench/<name> when missing or
    older than its source or a header beside it."""
    clients = os.path.join(BENCH_DIR, "clients")
    src = os.path.join(clients, f"{name}.cpp")
    out_dir = os.path.join(REPO_DIR, "build", "bench")
    binary = os.path.join(out_dir, name)
    newest = max(os.path.getmtime(os.path.join(clients, f)) for f in os.listdir(clients)
                 if f == f"{name}.cpp" or f.endswith(".hpp"))
    if os.path.exists(binary) and os.path.getmtime(binary) >= newest:
        return binary
    os.makedirs(out_dir, exist_ok=True)
    print(f"compiling {src} ...", file=sys.stderr)
    subprocess.run([compiler, "-O2", "-std=c++20", "-pthread", src, "-o", binary + ".tmp"], check=True)
    os.replace(binary + ".tmp", binary)
    return binary


def raise_nofile(needed):
    """Raises this process's RLIMIT_NOFILE (inherited by the servers and
    clients it starts) to at least `needed`, or exits saying what to do."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= needed:
        return
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(needed, soft), max(needed, hard)))
    except (ValueError, OSError):
        sys.exit(f"needs {needed} open files per process; the hard limit is {hard}: "
                 f"raise it (ulimit -Hn {needed} as root, or LimitNOFILE=) or ask for fewer connections")


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(port, path, timeout=1.0):
    """(status, body) of a GET on a fresh connection, or None if it fails."""
    req = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(req)
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
    except OSError:
        return None
    head, _, body = data.partition(b"\r\n\r\n")
    try:
        status = int(head.split(b" ", 2)[1])
    except (IndexError, ValueError):
        return None
    return status, body


def request_once(port, method="GET", path="/", body=b"", headers=(), timeout=1.0, tls=None):
    """(status, body) of one request on a fresh connection, the response read
    by its Content-Length (uWSGI does not close on `Connection: close`), or
    None if it fails. `tls`: an ssl.SSLContext to speak HTTPS with."""
    head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
    for name, value in headers:
        head += f"{name}: {value}\r\n"
    if body or method in ("POST", "PUT"):
        head += f"Content-Length: {len(body)}\r\n"
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as raw:
            s = tls.wrap_socket(raw, server_hostname="localhost") if tls else raw
            s.sendall(head.encode() + b"\r\n" + body)
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = s.recv(65536)
                if not chunk:
                    return None
                data += chunk
            head, _, got = data.partition(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                k, _, v = line.partition(b":")
                if k.strip().lower() == b"content-length":
                    length = int(v)
            while len(got) < length:
                chunk = s.recv(65536)
                if not chunk:
                    break
                got += chunk
            return int(head.split(b" ", 2)[1]), got
    except (OSError, ValueError, IndexError):
        return None


NGINX_CONF = """\
worker_processes {workers};
{affinity}
daemon off;
master_process on;
pid {tmp}/nginx.pid;
error_log {tmp}/nginx-error.log warn;
events {{
    worker_connections 4096;
}}
http {{
    access_log off;
    client_body_temp_path {tmp}/body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    keepalive_requests 1000000;
    server {{
        listen 127.0.0.1:{port} reuseport{listen_options};
{server_extra}        location /hello {{
            default_type text/plain;
            return 200 "Hello, World!";
        }}
    }}
}}
"""


def nginx_config(tmp, port, workers=1, pin=False, listen_options="", server_extra=""):
    """Writes an nginx.conf answering GET /hello with "Hello, World!" into
    `tmp` (with the temp directories nginx wants); returns its path."""
    for d in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        os.makedirs(os.path.join(tmp, d), exist_ok=True)
    path = os.path.join(tmp, f"nginx-{port}.conf")
    with open(path, "w") as f:
        f.write(NGINX_CONF.format(workers=workers, tmp=tmp, port=port, listen_options=listen_options,
                                  server_extra=server_extra,
                                  affinity="worker_cpu_affinity auto;" if pin else ""))
    return path


class Peer:
    """One server under test, in its own session and process group."""

    def __init__(self, name, cmd, port, env=None, cwd=None, log_dir=None):
        self.name, self.cmd, self.port = name, list(cmd), port
        self.env = dict(os.environ, **(env or {}))
        self.cwd = cwd
        self.log_dir = log_dir or tempfile.mkdtemp(prefix="bench-")
        self.log_path = os.path.join(self.log_dir, f"{name}.log")
        self.proc = None

    def start(self, ready_path="/", ready_timeout=30.0, tls=None, ready=None):
        """Starts the server and waits until it answers GET ready_path (over
        HTTPS with the ssl.SSLContext `tls`); returns that first (status, body).
        `ready`: a function of the port giving an answer or None, asked
        instead (a server that speaks no HTTP/1.1, say)."""
        log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(["env", "--default-signal=INT,QUIT", *self.cmd], stdout=log,
                                     stderr=subprocess.STDOUT, env=self.env, cwd=self.cwd,
                                     start_new_session=True)
        deadline = time.monotonic() + ready_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode}:\n{self.log()}")
            got = (ready(self.port) if ready else
                   request_once(self.port, "GET", ready_path, timeout=0.5, tls=tls))
            if got is not None:
                return got
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"{self.name} not answering on port {self.port}:\n{self.log()}")

    def cpu_seconds(self):
        return group_cpu_seconds(self.proc.pid)

    def log(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")[-4000:]
        except OSError:
            return ""

    def stop(self, sig=signal.SIGTERM, grace=10.0):
        if self.proc is None or self.proc.poll() is not None:
            return
        pgid = self.proc.pid  # session leader: pid == pgid
        try:
            os.killpg(pgid, sig)
            self.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            os.killpg(pgid, signal.SIGKILL)
            self.proc.wait(timeout=10)
        except ProcessLookupError:
            pass


def group_processes(pgid):
    """(pid, the /proc/<pid>/stat fields after the command name, state
    first) of every live process of a process group (a peer's master and
    its workers)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # state(0) ppid(1) pgrp(2) ... utime(11) stime(12) ... rss(21)
        if int(fields[2]) == pgid:
            yield int(entry), fields


def group_stats(pgid):
    """The stat fields of every live process of a process group."""
    return (fields for _, fields in group_processes(pgid))


def group_thread_sample(pgid):
    """bench/thread_cpu's sample over every process of a process group (the
    serving processes of m0 --workers N, not only the supervisor)."""
    out = {}
    for pid, _ in group_processes(pgid):
        out.update(thread_cpu.sample(pid))
    return out


def group_cpu_seconds(pgid):
    """User+system CPU seconds used so far by the live processes of a process
    group."""
    return sum(int(f[11]) + int(f[12]) for f in group_stats(pgid)) / os.sysconf("SC_CLK_TCK")


def group_rss_kib(pgid):
    """Resident memory (KiB) of the live processes of a process group."""
    return sum(int(f[21]) for f in group_stats(pgid)) * os.sysconf("SC_PAGE_SIZE") // 1024


class WrkResult:
    def __init__(self, rps, requests, errors, non_2xx, latency_avg, raw, percentiles_ms=None):
        self.rps, self.requests, self.errors, self.non_2xx = rps, requests, errors, non_2xx
        self.latency_avg, self.raw = latency_avg, raw
        self.percentiles_ms = percentiles_ms or {}  # {50: ms, 75: ..., 90: ..., 99: ...} from wrk --latency
        self.server_cpu_us_per_request = None  # filled in by callers that measure it


def run_wrk(url, connections, duration, threads=1, headers=BROWSER_HEADERS, timeout="5s", script=None):
    """Runs wrk once and returns a WrkResult (requests/s, socket errors,
    non-2xx); `script` is a wrk Lua file (a POST body, say)."""
    wrk = shutil.which("wrk")
    if wrk is None:
        raise RuntimeError("wrk not found (Debian package `wrk`)")
    threads = max(1, min(threads, connections))
    cmd = [wrk, f"-t{threads}", f"-c{connections}", f"-d{duration}", f"--timeout={timeout}", "--latency"]
    for name, value in headers:
        cmd += ["-H", f"{name}: {value}"]
    if script:
        cmd += ["-s", script]
    out = subprocess.run(cmd + [url], capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    errors = sum(int(x) for x in m.groups()) if m else 0
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    non_2xx = int(m.group(1)) if m else 0
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    m = re.search(r"Latency\s+(\S+)", out)
    percentiles = {int(p): duration_ms(v) for p, v in re.findall(r"^\s+(50|75|90|99)%\s+(\S+)$", out, re.M)}
    return WrkResult(rps, requests, errors, non_2xx, m.group(1) if m else "?", out, percentiles)


def duration_ms(text):
    """wrk's "812.00us", "1.23ms", "2.01s", "1.00m" in milliseconds."""
    m = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text)
    if not m:
        return float("nan")
    return float(m.group(1)) * {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 6e4}[m.group(2)]


def run_wrk_measured(peer, url, connections, duration, threads=1, headers=BROWSER_HEADERS, script=None):
    """run_wrk, plus the server's CPU time per request (µs) over the run: on a
    shared machine where wrk may be the bottleneck, this says which server
    does the same work for less."""
    before = peer.cpu_seconds()
    r = run_wrk(url, connections, duration, threads, headers, script=script)
    used = peer.cpu_seconds() - before
    if r.requests:
        r.server_cpu_us_per_request = used * 1e6 / r.requests
    return r


def measure(peer, url, connections, duration, wrk_threads, script=None, thread_prefixes=(), headers=BROWSER_HEADERS):
    """One wrk run after a discarded 1 s warm-up, with the server's CPU µs per
    request; r.thread_us[prefix] is that of the server's threads whose name
    starts with prefix (m0 names its threads), for each of thread_prefixes."""
    return measure_load(peer, lambda d: run_wrk(url, connections, d, wrk_threads, headers, script=script),
                        duration, thread_prefixes, f"c={connections}")


def measure_load(peer, load, duration, thread_prefixes=(), label=""):
    """`measure` for any load generator: load(duration) runs it once and
    gives a WrkResult; a discarded 1 s run first, then the measured one
    with the server's CPU µs per request (all of it, and r.thread_us[prefix]
    per thread name prefix)."""
    load("1s")
    before = group_thread_sample(peer.proc.pid) if thread_prefixes else {}
    cpu_before = peer.cpu_seconds()
    r = load(duration)
    used = peer.cpu_seconds() - cpu_before
    after = group_thread_sample(peer.proc.pid) if thread_prefixes else {}
    if r.requests:
        r.server_cpu_us_per_request = used * 1e6 / r.requests
    r.thread_us = {p: thread_cpu.us_per_request(before, after, r.requests, p) for p in thread_prefixes}
    if r.errors or r.non_2xx:
        print(f"warning: {peer.name} {label}: {r.errors} errors, {r.non_2xx} non-2xx", file=sys.stderr)
    return r


def run_h2load(url, clients, streams, duration, h1=False, threads=1, headers=BROWSER_HEADERS):
    """Runs nghttp2's h2load (Debian `nghttp2-client`) for `duration` ("5s")
    and returns a WrkResult: `clients` connections with `streams` requests
    in flight on each (h2 with prior knowledge on http://, ALPN h2 on
    https://; h1: HTTP/1.1, one connection per request in flight
    when streams is 1, pipelined above). Failed, errored and timed-out
    requests count as errors."""
    h2load = shutil.which("h2load")
    if h2load is None:
        raise RuntimeError("h2load not found (Debian package `nghttp2-client`)")
    seconds = duration_ms(duration) / 1000
    cmd = [h2load, f"-c{clients}", f"-m{streams}", f"-t{max(1, min(threads, clients))}", "-D", f"{seconds:g}"]
    for name, value in headers:
        cmd += ["-H", f"{name}: {value}"]
    if h1:
        cmd.append("--h1")
    out = subprocess.run(cmd + [url], capture_output=True, text=True, check=True).stdout
    m = re.search(r"finished in [\d.]+\w*, ([\d.]+) req/s", out)
    if m is None:
        raise RuntimeError(f"h2load gave no rate: {shlex.join(cmd + [url])}\n{out}")
    counts = dict((k, int(v)) for v, k in re.findall(r"(\d+) (total|succeeded|failed|errored|timeout)\b", out))
    codes = dict((k, int(v)) for v, k in re.findall(r"(\d+) ([2-5]xx)", out))
    m2 = re.search(r"time for request:\s+\S+\s+\S+\s+(\S+)", out)
    return WrkResult(float(m.group(1)), counts.get("succeeded", 0),
                     counts.get("failed", 0) + counts.get("errored", 0) + counts.get("timeout", 0),
                     sum(v for k, v in codes.items() if k != "2xx"), m2.group(1) if m2 else "?", out)


def curl_get(url, http="2-prior", timeout=2.0):
    """(status, body, HTTP version curl spoke: "1.1", "2") of one GET with
    curl, certificates not checked, or None if it fails. `http`: "2-prior"
    (h2c by prior knowledge, or h2 over TLS), "2" (ALPN h2, HTTP/1.1 on
    plain http://), "1.1"."""
    flag = {"2-prior": "--http2-prior-knowledge", "2": "--http2", "1.1": "--http1.1"}[http]
    got = subprocess.run(["curl", "-sk", flag, "--max-time", f"{timeout:g}", "-o", "-",
                          "-w", "%{stderr}%{http_code} %{http_version}", url], capture_output=True)
    try:
        status, version = got.stderr.decode().split()
        return (int(status), got.stdout, version) if got.returncode == 0 else None
    except ValueError:
        return None


def median_of(values):
    """The median of the values that are numbers (not None, not NaN); NaN
    when there are none."""
    got = [v for v in values if v is not None and v == v]
    return statistics.median(got) if got else float("nan")


def alternate(names, cases, rounds, run):
    """{(case, name): [result of each round]}, run(case, name) giving one
    result. For each case, `rounds` passes over every arm, the first arm
    rotated from pass to pass, so that none always runs on a warmer (or a
    busier) machine."""
    results = {}
    for ci, case in enumerate(cases):
        for rnd in range(rounds):
            shift = (rnd + ci) % len(names)
            for name in names[shift:] + names[:shift]:
                results.setdefault((case, name), []).append(run(case, name))
    return results


def summary(rs, base_rps, thread_prefixes=()):
    """Table cells for one arm's rounds: median req/s, its ratio to
    base_rps, every round, median CPU µs/req, and the median µs/req of each
    of thread_prefixes (- where not measured); then the error count."""
    rps = statistics.median(r.rps for r in rs)
    cells = [f"{rps:,.0f}", f"{rps / base_rps:.2f}" if base_rps else "-",
             "/".join(f"{r.rps / 1000:.1f}k" for r in rs),
             f"{statistics.median(r.server_cpu_us_per_request for r in rs):.1f}"]
    for p in thread_prefixes:
        got = statistics.median(r.thread_us.get(p, 0.0) for r in rs)
        cells.append(f"{got:.1f}" if got > 0 else "-")  # nan or no such thread
    return cells + [sum(r.errors + r.non_2xx for r in rs)]


def git_commit():
    """The short commit of the checkout the bench runs from ("" outside git),
    "+changes" after it when tracked files differ from that commit: the
    numbers are then those of a tree no commit names yet."""
    commit = subprocess.run(["git", "-C", REPO_DIR, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    changed = subprocess.run(["git", "-C", REPO_DIR, "status", "--porcelain", "--untracked-files=no"],
                             capture_output=True, text=True).stdout.strip()
    return commit + "+changes" if commit and changed else commit


def portable_argument(arg):
    """An argument of a bench's command as the results page shows it: a
    path outside the repository (a baseline build, a temporary directory)
    names only its last two parts, which say what it is, not where it was
    on the machine that ran the bench."""
    if not arg.startswith("/") or os.path.abspath(arg).startswith(REPO_DIR + os.sep):
        return arg
    return "<...>/" + "/".join(arg.rstrip("/").split("/")[-2:])


def write_results(path, bench, rows, **meta):
    """Writes a bench's rows as JSON for bench/charts and the results page,
    with the command that made them (as typed, from the repository's root),
    the date and the commit; `meta` adds fields (the load, the rounds)."""
    import datetime
    import json
    doc = {"bench": bench, "date": datetime.date.today().isoformat(), "commit": git_commit(),
           "command": shlex.join([f"bench/{bench}"] + [portable_argument(a) for a in sys.argv[1:]]), **meta,
           "rows": rows}
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)


def load_script(name):
    """Another bench script (bench/<name>, no .py suffix) as a module, so a
    bench reuses its app and arms instead of a copy."""
    import importlib.machinery
    import importlib.util
    loader = importlib.machinery.SourceFileLoader(name, os.path.join(BENCH_DIR, name))
    spec = importlib.util.spec_from_loader(name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def print_table(header, rows):
    """A Markdown table, columns padded for the terminal."""
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    fmt = lambda r: "| " + " | ".join(str(c).ljust(w) for c, w in zip(r, widths)) + " |"
    print(fmt(header))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print(fmt(r))
