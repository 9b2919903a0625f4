#!/usr/bin/env python3
"""Per-thread CPU of a running process during a load run.

Samples /proc/<pid>/task/*/stat and comm, then prints, per thread name
(m0 names its threads: the reactors, m0-pool-N, ...), CPU % of one core and
CPU microseconds per request.

    thread_cpu.py --pid PID --seconds 10 --requests 123456
    thread_cpu.py --pid PID --wrk-output wrk.txt          # requests from wrk's summary
    thread_cpu.py --pid PID -- wrk -t2 -c64 -d10s http://127.0.0.1:8000/
                                                          # runs the load, samples meanwhile

Threads that exit during the run keep their last sample. Same-named threads
are summed (their count is shown).
"""
import argparse
import os
import re
import subprocess
import sys
import time

TICKS = os.sysconf("SC_CLK_TCK")


def sample(pid):
    """{tid: (name, cpu_seconds)} for every live thread of pid."""
    out = {}
    base = f"/proc/{pid}/task"
    try:
        tids = os.listdir(base)
    except FileNotFoundError:
        return out
    for tid in tids:
        try:
            with open(f"{base}/{tid}/stat") as f:
                stat = f.read()
            with open(f"{base}/{tid}/comm") as f:
                name = f.read().strip()
        except (FileNotFoundError, ProcessLookupError):
            continue  # exited between listdir and open
        fields = stat[stat.rindex(")") + 2:].split()
        utime, stime = int(fields[11]), int(fields[12])  # stat fields 14, 15
        out[int(tid)] = (name, (utime + stime) / TICKS)
    return out


def us_per_request(before, after, requests, prefix):
    """CPU µs per request of the threads whose name starts with prefix,
    between two samples."""
    used = 0.0
    for tid, (name, cpu) in after.items():
        if name.startswith(prefix):
            used += cpu - before.get(tid, (name, 0.0))[1]
    return used * 1e6 / requests if requests else float("nan")


def requests_from_wrk(text):
    m = re.search(r"(\d+) requests in", text)
    if not m:
        sys.exit("no 'N requests in' line in the wrk output")
    return int(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--seconds", type=float, help="sample for this long (without a command)")
    ap.add_argument("--requests", type=int, help="requests served during the run")
    ap.add_argument("--wrk-output", help="file holding wrk's output for this run")
    ap.add_argument("--interval", type=float, default=0.2, help="seconds between samples")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="-- load command to run while sampling")
    args = ap.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command and args.seconds is None:
        ap.error("give --seconds or a load command after --")

    first = sample(args.pid)
    last = dict(first)
    t0 = time.monotonic()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True) if command else None
    deadline = None if proc else t0 + args.seconds
    while True:
        done = proc.poll() is not None if proc else time.monotonic() >= deadline
        last.update(sample(args.pid))
        if done:
            break
        time.sleep(args.interval)
    wall = time.monotonic() - t0

    requests = args.requests
    if proc:
        output = proc.stdout.read()
        sys.stdout.write(output)
        if requests is None:
            requests = requests_from_wrk(output)
    elif args.wrk_output and requests is None:
        with open(args.wrk_output) as f:
            requests = requests_from_wrk(f.read())

    per_name = {}
    for tid, (name, cpu) in last.items():
        start = first.get(tid, (name, 0.0))[1]
        count, total = per_name.get(name, (0, 0.0))
        per_name[name] = (count + 1, total + cpu - start)

    print(f"\nper-thread CPU of pid {args.pid} over {wall:.2f} s"
          + (f", {requests} requests" if requests else ""))
    print(f"{'thread':<20} {'n':>3} {'CPU %':>8} {'CPU us/req':>11}")
    total = 0.0
    for name, (count, cpu) in sorted(per_name.items(), key=lambda kv: -kv[1][1]):
        total += cpu
        per_req = f"{cpu * 1e6 / requests:11.2f}" if requests else f"{'-':>11}"
        print(f"{name:<20} {count:>3} {100 * cpu / wall:8.1f} {per_req}")
    per_req = f"{total * 1e6 / requests:11.2f}" if requests else f"{'-':>11}"
    print(f"{'total':<20} {len(last):>3} {100 * total / wall:8.1f} {per_req}")


if __name__ == "__main__":
    main()
