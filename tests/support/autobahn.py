"""The Autobahn TestSuite's cases (kosoku, in fuzzingclient mode) against a
WebSocket echo endpoint of a running m0, shared by the conformance tests of
every frontend that serves one. docs/realtime.md has the summaries.

Bounded for time: chapters 1-10 run whole (9.x, the 16 MiB and 1000-message
cases included, takes seconds); of the compression cases 12.x and 13.x (each
1000 messages of one size, every offer variant of 13.x), the message sizes
16 B to 8 KiB (size cases 1-6) and 8 KiB sent in 256-byte fragments (case
11) run, which keeps every offer and data set and leaves out the 16 KiB -
128 KiB sizes that take minutes."""
import collections
import json
import os
import subprocess
import sys

import m0test

# Autobahn has no chapters 8 and 11.
FULL_CHAPTERS = [1, 2, 3, 4, 5, 6, 7, 9, 10]
COMPRESSION_SIZES = [1, 2, 3, 4, 5, 6, 11]
# The cases of chapters 1-10 (every one runs whole).
FULL_CASES = 301
ACCEPTED = {"OK", "NON-STRICT", "INFORMATIONAL"}


def case_key(case_id):
    return [int(part) for part in case_id.split(".")]


def run_cases(url, report_dir):
    """Runs the selection against `url`; fails on any case that did not end
    OK, NON-STRICT or INFORMATIONAL (naming each), and returns the count of
    each outcome."""
    # Compression cases by id: 12.<data set>.<size> (5 data sets) and
    # 13.<offer>.<size> (7 offer variants).
    compression = [f"12.{data}.{size}" for data in range(1, 6) for size in COMPRESSION_SIZES]
    compression += [f"13.{offer}.{size}" for offer in range(1, 8) for size in COMPRESSION_SIZES]
    selection = [f"{n}.*" for n in FULL_CHAPTERS] + compression
    args = [os.path.join(os.path.dirname(sys.executable), "kosoku"), url, "-p", "2", "-o", str(report_dir)]
    for pattern in selection:
        args += ["-i", pattern]
    run = subprocess.run(args, capture_output=True, text=True, timeout=m0test.scaled(600), cwd=report_dir)

    index = report_dir / "index.json"
    assert index.exists(), f"kosoku wrote no report (exit {run.returncode}):\n{run.stdout}{run.stderr}"
    with open(index) as f:
        report = json.load(f)
    assert len(report) == 1, report.keys()  # one agent: m0
    cases = next(iter(report.values()))
    bad = {case_id: (c["behavior"], c["behaviorClose"]) for case_id, c in cases.items()
           if c["behavior"] not in ACCEPTED or c["behaviorClose"] not in ACCEPTED}
    summary = collections.Counter(c["behavior"] for c in cases.values())
    assert not bad, f"{len(bad)} cases not passed: " + ", ".join(
        f"{k} {v}" for k, v in sorted(bad.items(), key=lambda kv: case_key(kv[0])))
    assert run.returncode == 0, run.stdout + run.stderr
    # Every chapter ran (a selection that matched nothing would pass vacuously).
    chapters = {case_id.split(".")[0] for case_id in cases}
    assert chapters == {str(n) for n in [*FULL_CHAPTERS, 12, 13]}, chapters
    assert len(cases) == FULL_CASES + len(compression), (len(cases), summary)
    print(f"autobahn: {len(cases)} cases: {dict(summary)}")
    return summary
