"""pytest setup shared by every end-to-end test: makes `m0test` importable and
makes an exception in a background thread fail the test that started it."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import pytest  # noqa: E402

import m0test  # noqa: E402


def pytest_configure(config):
    # pytest reports an exception raised in a thread as a warning, so a client
    # thread that dies on a malformed response would leave its test passing.
    # As an error it fails the test during which the thread ended; tests join
    # their threads before returning so that this is their own test.
    config.addinivalue_line("filterwarnings", "error::pytest.PytestUnhandledThreadExceptionWarning")


# Skips that are by design: the test does not apply to that case. Any other
# skip (a tool or plugin that is missing) is an install bug when M0_NO_SKIP=1,
# as scripts/test sets it: the test fails instead of passing unseen.
EXPECTED_SKIPS = (
    "the inline executor runs the app on the reactor",
    # With `inline` the reactor runs the app, so it cannot pull a body for
    # it: bodies stay whole by design (frontend-wsgi README).
    "inline buffers the body",
    "inline reads the whole body before the app runs",
)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("M0_NO_SKIP") != "1" or not report.skipped or hasattr(report, "wasxfail"):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    if not any(expected in reason for expected in EXPECTED_SKIPS):
        report.outcome = "failed"
        report.longrepr = f"skipped, but M0_NO_SKIP=1 and the reason is not an expected one: {reason}"


@pytest.fixture
def m0_server():
    """Factory fixture: m0_server(config_text_or_path, *extra_args) -> running Server.

    Every server started through it is stopped at the end of the test
    (SIGKILL as a last resort); a sanitizer report in its log fails the test.
    """
    started = []

    def start(config, *args, **kwargs):
        server = m0test.Server(config, *args, **kwargs)
        started.append(server)
        server.start()
        return server

    yield start
    m0test.finish_servers(started)
