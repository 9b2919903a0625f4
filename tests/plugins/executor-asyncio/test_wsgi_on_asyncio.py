"""Swapping the executor is a YAML change: a WSGI app on `executor.type:
asyncio` runs each call on the loop thread (blocking it, an experiment)."""
import os

import pytest

import m0test

HERE = os.path.dirname(os.path.abspath(__file__))
PLUGINS = os.path.join(m0test.BUILD_DIR, "lib", "m0", "plugins")

pytestmark = pytest.mark.skipif(
    not os.path.exists(os.path.join(PLUGINS, "m0-executor-asyncio.so")),
    reason="the Python plugins are not built (M0_BUILD_PYTHON=OFF)")

CONFIG = (
    "frontend:\n"
    "  type: wsgi\n"
    "  app: \"wsgi_on_loop:app\"\n"
    f"  chdir: {os.path.join(HERE, 'apps')}\n"
    "executor:\n"
    "  type: asyncio\n"
    "  asyncio:\n"
    "    loops: 2\n"
)


def test_wsgi_app_on_the_asyncio_executor(m0_server):
    server = m0_server(CONFIG, threads=2)
    for i in range(20):
        r = m0test.request(server.port, "POST", "/", body=b"n%d" % i)
        assert r.status == 200
        assert r.body == b"wsgi:n%d" % i
    r = m0test.request(server.port, "GET", "/stream")
    assert r.body == b"".join(b"chunk%d " % i for i in range(100))
    assert server.stop() == 0


def test_uvloop_missing_is_a_config_error_naming_the_venv(tmp_path):
    # A venv of its own without uvloop (the test venv has it).
    import subprocess
    import sys
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    config = tmp_path / "m0.yaml"
    config.write_text(CONFIG + "    loop: uvloop\n" + f"python:\n  venv: {venv}\n")
    p = m0test.run_m0("--config", str(config), "--check", env={"VIRTUAL_ENV": ""})
    assert p.returncode == 2, p.stderr
    out = p.stderr + p.stdout
    assert "uvloop" in out and "loop: asyncio" in out
    assert str(venv) in out
