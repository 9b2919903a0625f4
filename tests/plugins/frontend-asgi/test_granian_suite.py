"""A third-party ASGI test suite against m0: Granian's own server tests
(tests/test_asgi.py, the ASGI half of tests/test_ws.py, and tests/test_wsgi.py
against `--interface wsgi`), as its sdist ships them, with only their
conftest.py replaced by granian_suite_conftest.py, which serves the suite's
apps with `m0 --app tests.apps.<interface>:app --interface <interface>`.

scripts/setup fetches the sdist into the test venv and checks its sha256
(tests/thirdparty.txt); this test checks it again, unpacks the suite into a
temporary directory and runs it with pytest in a subprocess. Every test must
pass but the few in DEVIATIONS, each of which must fail exactly as listed
(one that passes is reported: the list must stay true). Where that failure
stops a test before its other assertions, the test runs once more with m0's
answer put in place of Granian's, so that the rest of it is checked too.
docs/testing.md has the reasons in prose."""
import collections
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ElementTree

import pytest

import m0test
from conftest import HERE, needs_asgi

pytestmark = needs_asgi

SDIST = "granian-2.8.9.tar.gz"
SUITE_FILES = ["tests/test_asgi.py", "tests/test_ws.py", "tests/test_wsgi.py"]
# RSGI is Granian's own protocol.
SELECTION = "not rsgi"
# test_asgi.py 9 tests, test_ws.py 6 ASGI ones, test_wsgi.py 5; each for
# Granian's two runtime modes (mt, st), which m0 ignores.
SELECTED_TESTS = 40

Deviation = collections.namedtuple("Deviation", "tests reason failure patch")

DEVIATIONS = [
    Deviation(
        tests=["test_asgi.py::test_scope", "test_ws.py::test_asgi_scope"],
        reason="m0 serves every addition of the ASGI HTTP & WebSocket spec up to its latest version, 2.5 "
               "(the websocket.disconnect reason), and says so; Granian 2.8.9 says 2.3",
        failure="{'spec_version': '2.5'} != {'spec_version': '2.3'}",
        patch=("{'version': '3.0', 'spec_version': '2.3'}", "{'version': '3.0', 'spec_version': '2.5'}")),
    Deviation(
        tests=["test_asgi.py::test_protocol_error"],
        reason="send() of an unknown message type raises with a message that names the type and the scope; "
               "Granian's says 'Unsupported ASGI message'",
        failure="+ unexpected ASGI message type 'wrong.msg' on an http scope",
        patch=("'Unsupported ASGI message'", "\"unexpected ASGI message type 'wrong.msg' on an http scope\"")),
    Deviation(
        tests=["test_ws.py::test_reject"],
        reason="a websocket app that returns without websocket.accept or websocket.close has not answered the "
               "handshake: m0 answers 500 and logs it, as uvicorn and Hypercorn do (a websocket.close before "
               "the accept, the spec's denial, is answered 403: test_asgi_reject_explicit); Granian answers 403",
        failure="assert 500 == 403",
        patch=None),
]

# Skips of the suite's own making.
EXPECTED_SKIPS = {
    "test_wsgi.py::test_body_large": "not PGO build",
}


def thirdparty_entry(name):
    """(sha256, url) of `name` in tests/thirdparty.txt."""
    with open(os.path.join(m0test.SOURCE_DIR, "tests", "thirdparty.txt")) as f:
        for line in f:
            fields = line.split()
            if len(fields) == 2 and not fields[0].startswith("#") and fields[1].endswith("/" + name):
                return fields[0], fields[1]
    raise AssertionError(f"tests/thirdparty.txt has no entry for {name}")


def verified_sdist():
    """The path of the sdist, its sha256 checked."""
    sha, url = thirdparty_entry(SDIST)
    path = os.path.join(sys.prefix, "thirdparty", SDIST)
    if not os.path.exists(path):
        pytest.fail(f"{path} is missing: run scripts/setup (it fetches {url})", pytrace=False)
    with open(path, "rb") as f:
        found = hashlib.sha256(f.read()).hexdigest()
    if found != sha:
        pytest.fail(f"{path} has sha256 {found}, tests/thirdparty.txt says {sha}: delete it and run scripts/setup",
                    pytrace=False)
    return path


def unpack_suite(sdist, into):
    """Unpacks the sdist's tests/ and pyproject.toml (its pytest settings)
    into `into`, puts our conftest in place of Granian's; returns the root."""
    root = SDIST.removesuffix(".tar.gz")
    wanted = (f"{root}/tests/", f"{root}/pyproject.toml")
    with tarfile.open(sdist) as tar:
        members = [m for m in tar.getmembers() if m.name.startswith(wanted) and (m.isfile() or m.isdir())]
        for m in members:
            assert not os.path.isabs(m.name) and ".." not in m.name.split("/"), m.name
        # The names are checked above; Pythons that have extraction filters
        # get the strictest one too.
        extra = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        tar.extractall(into, members=members, **extra)
    suite = os.path.join(into, root)
    shutil.copyfile(os.path.join(HERE, "granian_suite_conftest.py"), os.path.join(suite, "tests", "conftest.py"))
    return suite


def run_suite(suite, report, *args):
    """Runs pytest on the suite; returns {test id: (outcome, message)} from
    its JUnit report, test ids as "test_asgi.py::test_scope[mt]"."""
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--junitxml", report,
         "-o", "asyncio_default_fixture_loop_scope=function", *args],
        cwd=suite, capture_output=True, text=True, timeout=m0test.scaled(300),
        env=dict(os.environ, M0_SOURCE_DIR=m0test.SOURCE_DIR, M0_BUILD_DIR=m0test.BUILD_DIR))
    assert os.path.exists(report), f"pytest wrote no report (exit {run.returncode}):\n{run.stdout}{run.stderr}"
    outcomes = {}
    for case in ElementTree.parse(report).iter("testcase"):
        test_id = case.get("classname").rsplit(".", 1)[-1] + ".py::" + case.get("name")
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome, message = child.tag, child.get("message") or child.text or ""
        outcomes[test_id] = (outcome, message)
    return outcomes, run.stdout + run.stderr


def unparametrized(test_id):
    return test_id.split("[", 1)[0]


def deviation_of(test_id):
    return next((d for d in DEVIATIONS if unparametrized(test_id) in d.tests), None)


def verdict(outcomes):
    """What differs from the expected outcomes, one line each."""
    problems = []
    for test_id, (outcome, message) in sorted(outcomes.items()):
        deviation = deviation_of(test_id)
        if outcome == "skipped":
            if EXPECTED_SKIPS.get(unparametrized(test_id)) != message:
                problems.append(f"{test_id} skipped: {message}")
        elif deviation is None:
            if outcome != "passed":
                problems.append(f"{test_id} {outcome}: {message}")
        elif outcome == "passed":
            problems.append(f"{test_id} passed: an expected deviation no more ({deviation.reason}); "
                            "take it off DEVIATIONS and docs/testing.md")
        elif deviation.failure not in message:
            problems.append(f"{test_id} {outcome}, but not with {deviation.failure!r} as expected: {message}")
    return problems


def patch_deviations(suite):
    """Puts m0's answer in place of Granian's in the suite's files for each
    deviation that has a patch; returns the ids to run again."""
    rerun = []
    for deviation in DEVIATIONS:
        if deviation.patch is None:
            continue
        old, new = deviation.patch
        for test in deviation.tests:
            path = os.path.join(suite, "tests", test.split("::")[0])
            with open(path) as f:
                text = f.read()
            assert old in text or new in text, f"{path} has no {old!r}: the suite changed"
            with open(path, "w") as f:
                f.write(text.replace(old, new))
            rerun.append("tests/" + test)
    return rerun


def test_granian_suite_passes_but_for_the_listed_deviations(tmp_path):
    suite = unpack_suite(verified_sdist(), tmp_path)
    outcomes, output = run_suite(suite, tmp_path / "suite.xml", "-k", SELECTION, *SUITE_FILES)
    assert len(outcomes) == SELECTED_TESTS, f"{len(outcomes)} tests ran, not {SELECTED_TESTS}:\n{output}"
    problems = verdict(outcomes)
    assert not problems, "\n".join(problems) + "\n\npytest's output:\n" + output

    # The deviating tests again, each with m0's answer where Granian's was:
    # what the deviating assertion kept from running must pass.
    rerun = patch_deviations(suite)
    outcomes, output = run_suite(suite, tmp_path / "rerun.xml", "-k", SELECTION, *rerun)
    assert len(outcomes) == 2 * len(rerun), f"{len(outcomes)} tests ran again:\n{output}"
    failed = [f"{test_id} {outcome}: {message}" for test_id, (outcome, message) in sorted(outcomes.items())
              if outcome != "passed"]
    assert not failed, "with m0's answers put in:\n" + "\n".join(failed) + "\n\npytest's output:\n" + output
