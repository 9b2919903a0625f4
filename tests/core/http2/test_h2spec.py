"""h2spec (HTTP/2 conformance, RFC 7540 and RFC 7541) in strict mode against
m0's native frontend: over prior-knowledge h2c on a plain listener and over
TLS (ALPN h2). Its JUnit report is read case by case; every failure is
printed. scripts/setup builds h2spec into .venv/tools/bin."""
import os
import shutil
import subprocess
import xml.etree.ElementTree as ElementTree

import pytest

import m0test
from h2_support import native_config
from support.tls import TLS_LISTEN, ServerCertificate

# h2spec 2.2.1 in strict mode runs 146 cases.
CASES = 146
# The one case that may fail, over h2c only: a plain listener speaks HTTP/1.1
# and HTTP/2 on the same port, so a preface that is not HTTP/2's is taken for
# an HTTP/1.1 request (answered 400 and closed) where h2spec wants a bare close.
ALLOWED_FAILURES = {"h2c": ("http2/3.5 ",), "tls": ()}


def h2spec_binary():
    local = os.path.join(m0test.SOURCE_DIR, ".venv", "tools", "bin", "h2spec")
    return local if os.access(local, os.X_OK) else shutil.which("h2spec")


def junit_cases(path):
    """[(name, outcome, message)] of a JUnit report; outcome is passed,
    failed or skipped."""
    cases = []
    for case in ElementTree.parse(path).getroot().iter("testcase"):
        name = f"{case.get('package', '')} {case.get('classname', '')}".strip()
        outcome, message = "passed", ""
        for tag in ("failure", "error"):
            found = case.find(tag)
            if found is not None:
                outcome, message = "failed", (found.get("message") or "") + (found.text or "")
        if case.find("skipped") is not None:
            outcome = "skipped"
        cases.append((name, outcome, message.strip()))
    return cases


@pytest.mark.parametrize("transport", ["h2c", "tls"])
def test_h2spec_strict(m0_server, tmp_path, transport):
    binary = h2spec_binary()
    if binary is None:
        pytest.skip("h2spec is not installed (scripts/setup builds it into .venv/tools/bin)")
    root = tmp_path / "www"
    root.mkdir()
    (root / "index.html").write_text("hello\n")
    certs = ServerCertificate(tmp_path / "certs")
    server = m0_server(native_config(root) + certs.tls_section(), *TLS_LISTEN)
    port = server.ports[1] if transport == "tls" else server.ports[0]
    report = tmp_path / "h2spec.xml"
    command = [binary, "-S", "-h", "127.0.0.1", "-p", str(port), "-o", str(int(m0test.scaled(5))),
               "-j", str(report)]
    if transport == "tls":
        command += ["-t", "-k"]
    run = subprocess.run(command, capture_output=True, text=True, timeout=m0test.scaled(300))
    assert report.exists(), f"h2spec wrote no report (exit {run.returncode}):\n{run.stdout}\n{run.stderr}"
    cases = junit_cases(report)
    failed = [(name, message) for name, outcome, message in cases if outcome == "failed"]
    passed = sum(1 for _, outcome, _ in cases if outcome == "passed")
    for name, message in failed:
        print(f"h2spec {transport} FAILED: {name}: {message}")
    assert len(cases) >= CASES, f"h2spec ran {len(cases)} cases, not {CASES}:\n{run.stdout[-3000:]}"
    unexpected = [(name, message) for name, message in failed
                  if not name.startswith(ALLOWED_FAILURES[transport])]
    assert passed >= CASES - 1 and not unexpected, (
        f"{passed} of {len(cases)} h2spec cases passed over {transport}; failed:\n"
        + "\n".join(f"  {name}: {message}" for name, message in failed))
    # m0 is still up and serves after the whole suite.
    assert m0test.request(server.ports[0], path="/hello").body == b"Hello, World!"
    assert server.stop() == 0
