"""The wheel (python/, pyproject.toml, scripts/wheel): m0 hosted in the
user's own Python. One wheel, built by scripts/wheel for M0_WHEEL_PYTHON
(default: Debian's python3.11), or the one M0_WHEEL names, is installed into a
fresh venv of that interpreter with Django, Flask and FastAPI from PyPI, and serves
as the source build does: `m0 --app`, `m0 --config`, `python -m m0` (also with --reload),
`--workers 2` with a SIGHUP reload under load, a SIGTERM drain; bad input gets the
source build's messages; the example plugins (examples/hello-plugin,
single-reactor-scheduler, condvar-pool-executor) build against the wheel's
SDK and serve from it."""
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import zipfile
from urllib.parse import urlencode

import pytest
from websockets.sync.client import connect

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import m0test  # noqa: E402
from support.sdk_examples import SINGLE, build_example, condvar_config, meet_side_by_side  # noqa: E402
from support.sse_stream import StreamReader  # noqa: E402

PYTHON = os.environ.get("M0_WHEEL_PYTHON", "/usr/bin/python3.11")
# A venv made by the harness: the hosted m0 must not be pointed elsewhere.
ENV = {"VIRTUAL_ENV": "", "M0_PLUGIN_PATH": ""}

APPS = {
    "flask_app.py": '''
import os
import sys
import time

import m0
from flask import Flask

app = Flask(__name__)


@app.get("/")
def index():
    return f"flask pid={os.getpid()} executable={sys.executable} publish={hasattr(m0, 'publish')}\\n"


@app.get("/slow")
def slow():
    time.sleep(0.5)  # a request in flight when the drain starts
    return "slow done\\n"
''',
    "asgi_tasks.py": '''
# Each route checks, through the hosted m0, one thing a request's Task has as
# one made by loop.create_task(), though its first step runs at once (the
# ASGI frontend's python::start_task_eagerly: eager_start on 3.12+).
import asyncio
import contextvars

request_value = contextvars.ContextVar("request_value", default="unset")
hung = {}


class AppTask(asyncio.Task):
    pass


async def answer(send, status, text):
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": text.encode()})


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            await send({"type": message["type"] + ".complete"})
            if message["type"] == "lifespan.shutdown":
                return
    path = scope["path"]
    if path == "/task":
        task = asyncio.current_task()
        first = f"task={type(task).__name__}/{isinstance(task, asyncio.Task)} listed={task in asyncio.all_tasks()}"
        await asyncio.sleep(0)
        await answer(send, 200, f"{first} same_after_wait={asyncio.current_task() is task}")
    elif path == "/context":
        before = request_value.get()
        request_value.set(scope["query_string"].decode())
        await asyncio.sleep(0.05)  # the other requests set theirs meanwhile
        await answer(send, 200, f"{before} {request_value.get()}")
    elif path == "/woken":
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        loop.call_later(0.01, fut.set_result, "woken by the loop")
        await answer(send, 200, await fut)
    elif path == "/raise-at-once":
        raise RuntimeError("raised in the first step")
    elif path == "/raise-later":
        await asyncio.sleep(0)
        raise RuntimeError("raised after a wait")
    elif path == "/hang":
        hung["task"] = asyncio.current_task()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            hung["caught"] = True
            raise
    elif path == "/task-factory":
        # The app's Task class for the requests that follow, as for every
        # loop.create_task() (none again with ?off).
        asyncio.get_running_loop().set_task_factory(
            None if scope["query_string"] == b"off" else lambda loop, coro, **kw: AppTask(coro, loop=loop, **kw))
        await answer(send, 200, type(asyncio.current_task()).__name__)
    elif path == "/cancel-hung":
        task = hung["task"]
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        await answer(send, 200, f"cancelled={task.cancelled()} caught={hung.get('caught')}")
''',
}


def run(cmd, ok=True, **kwargs):
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=m0test.scaled(900),
                          **kwargs)
    if ok:
        assert proc.returncode == 0, f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc


def pins(*names):
    """The versions tests/requirements.txt (and examples/requirements.txt,
    which it includes) pin for these packages."""
    lines = []
    for path in (("tests", "requirements.txt"), ("examples", "requirements.txt")):
        with open(os.path.join(m0test.SOURCE_DIR, *path)) as f:
            lines += [line.strip() for line in f if "==" in line]
    found = [line for line in lines if line.split("==")[0].lower() in {n.lower() for n in names}]
    assert len(found) == len(names), (names, found)
    return found


@pytest.fixture(scope="module")
def wheel():
    path = os.environ.get("M0_WHEEL")
    if not path:
        out = run([os.path.join(m0test.SOURCE_DIR, "scripts", "wheel"), PYTHON], cwd=m0test.SOURCE_DIR)
        path = os.path.join(m0test.SOURCE_DIR, out.stdout.split()[-1])
    assert os.path.isfile(path), path
    return os.path.abspath(path)


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory):
    """A fresh venv of PYTHON with the wheel, Django, Flask and FastAPI installed."""
    root = tmp_path_factory.mktemp("hosted")
    run([PYTHON, "-m", "venv", root / "venv"])
    pip = [root / "venv" / "bin" / "pip", "install", "-q", "--disable-pip-version-check"]
    apps = pins("Flask", "Django", "fastapi", "python-multipart", "starlette", "anyio", "uvloop")
    if run([PYTHON, "-c", "import sys; print(sys.version_info >= (3, 11))"]).stdout.strip() != "True":
        # Some of the pins need 3.11+: on 3.10 (checked by hand, not in CI)
        # pip picks the newest releases that support it.
        apps = [a.split("==")[0] for a in apps]
    run([*pip, wheel, *apps])
    app_dir = root / "apps"
    app_dir.mkdir()
    for name, text in APPS.items():
        (app_dir / name).write_text(text)
    bin_dir = root / "venv" / "bin"
    return {"root": root, "bin": bin_dir, "apps": app_dir, "m0": [str(bin_dir / "m0")],
            "python_m": [str(bin_dir / "python"), "-m", "m0"]}


def elf_files(directory):
    for dirpath, _, names in os.walk(directory):
        for name in names:
            path = os.path.join(dirpath, name)
            with open(path, "rb") as f:
                if f.read(4) == b"\x7fELF":
                    yield path


def test_wheel_is_manylinux_and_every_elf_in_it_is_self_contained(wheel, tmp_path):
    name = os.path.basename(wheel)
    v = run([PYTHON, "-c", "import sys; print(f'cp{sys.version_info[0]}{sys.version_info[1]}')"]).stdout.strip()
    # glibc 2.34 and GCC 11's libstdc++ (RHEL 9): cmake/gcc11_libstdcxx_abi.hpp.
    assert re.fullmatch(rf"m0-[0-9.]+-{v}-{v}-manylinux_2_34_x86_64\.whl", name), name
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        z.extractall(tmp_path)
    for must in ("m0/__init__.py", "m0/__main__.py", "m0/lib/libm0core.so", "m0/lib/libm0python.so",
                 "m0/include/m0/plugin.hpp", "m0/lib/cmake/m0/m0Config.cmake"):
        assert must in names, must
    assert f"m0/_m0.cpython-{v[2:]}-x86_64-linux-gnu.so" in names, names
    for plugin in ("frontend-wsgi", "frontend-asgi", "frontend-http", "executor-pool", "executor-asyncio",
                   "module-realtime"):
        assert f"m0/lib/m0/plugins/m0-{plugin}.so" in names, plugin
    # The libraries of the build machine, bundled under hashed names.
    for lib in ("libboost_program_options", "libyaml-cpp", "libhiredis"):
        assert any(n.startswith(f"m0.libs/{lib}-") for n in names), (lib, names)
    elves = list(elf_files(tmp_path))
    assert len(elves) >= 12
    for path in elves:
        dyn = run(["readelf", "-d", path]).stdout
        needed = re.findall(r"\(NEEDED\).*\[(.*)\]", dyn)
        assert not [n for n in needed if "libpython" in n], (path, needed)
        for rpath in re.findall(r"\((?:RPATH|RUNPATH)\).*\[(.*)\]", dyn):
            for entry in rpath.split(":"):
                assert entry.startswith("$ORIGIN"), (path, rpath)
        # The symbol versions it needs: none newer than glibc 2.34 and GCC 11's libstdc++.
        versions = re.findall(r"Name: (GLIBC(?:XX)?)_([0-9.]+)", run(["readelf", "-V", path]).stdout)
        assert versions, path
        too_new = [f"{lib}_{ver}" for lib, ver in versions
                   if tuple(map(int, ver.split("."))) > ((3, 4, 29) if lib == "GLIBCXX" else (2, 34))]
        assert not too_new, (path, too_new)
    auditwheel = os.path.join(m0test.SOURCE_DIR, "build-wheel", "tools", "bin", "auditwheel")
    show = run([auditwheel, "show", wheel]).stdout
    assert re.search(r'consistent with the\s+following platform tag: "manylinux_2_34_x86_64"', show), show


def test_version_says_hosted_and_which_python(venv):
    for program in (venv["m0"], venv["python_m"]):
        out = m0test.run_m0("--version", program=program, env=ENV)
        assert out.returncode == 0, out.stderr
        assert out.stdout.startswith("m0 "), out.stdout
        assert re.search(rf"^python: hosted in CPython 3\.\d+\.\d+ \({re.escape(str(venv['bin']))}/python[0-9.]*\)$",
                         out.stdout, re.M), out.stdout


def test_m0_plugins_lists_the_packaged_plugins(venv):
    out = m0test.run_m0("plugins", program=venv["m0"], env=ENV)
    assert out.returncode == 0, out.stderr
    assert "REFUSED" not in out.stdout, out.stdout
    site = str(venv["root"] / "venv" / "lib")
    # One directory, the package's: nothing beside the venv's python (its
    # bin/../lib/m0/plugins is no place of m0's).
    searched = out.stdout.splitlines()[0].removeprefix("search path:").split()
    assert len(searched) == 1 and searched[0].startswith(site) and searched[0].endswith("/m0/lib/m0/plugins"), \
        out.stdout
    for name, kind in (("wsgi", "frontend"), ("asgi", "frontend"), ("http", "frontend"), ("pool", "executor"),
                       ("asyncio", "executor"), ("realtime", "module")):
        lines = [line for line in out.stdout.splitlines() if line.startswith(f"{name}\t{kind}\t")]
        assert len(lines) == 1 and site in lines[0] and "/m0/lib/m0/plugins/" in lines[0], (name, out.stdout)


def maps_libpythons(pid):
    with open(f"/proc/{pid}/maps") as f:
        return {line.split()[-1] for line in f if "libpython" in line}


def test_flask_app_with_app_flag_one_interpreter(m0_server, venv):
    server = m0_server(None, "--app", "flask_app:app", program=venv["m0"], cwd=venv["apps"], env=ENV)
    resp = m0test.request(server.port, "GET", "/")
    assert resp.status == 200, server.output()
    # The venv's own interpreter serves, with the m0 module applications use.
    assert re.match(rf"flask pid={server.proc.pid} executable={re.escape(str(venv['bin']))}/python[0-9.]* "
                    r"publish=True\n", resp.body.decode()), resp.body
    assert "serving it as wsgi" in server.output()
    # One interpreter in the process: a static one maps no libpython at all,
    # a shared one exactly its own.
    assert len(maps_libpythons(server.proc.pid)) <= 1, maps_libpythons(server.proc.pid)
    assert server.stop(signal.SIGTERM) == 0, server.output()


def test_fastapi_example_from_its_config_with_python_dash_m(m0_server, venv):
    server = m0_server(os.path.join(m0test.SOURCE_DIR, "configs", "fastapi.yaml"), program=venv["python_m"], env=ENV)
    resp = m0test.request(server.port, "GET", "/")
    assert resp.status == 200, server.output()
    # The lifespan ran on the asyncio lane of the hosted interpreter.
    assert json.loads(resp.body) == {"service": "notes", "store_open": True, "notes": 0}, resp.body
    note = m0test.request(server.port, "POST", "/notes", headers={"Content-Type": "application/json"},
                          body=json.dumps({"text": "hosted"}).encode())
    assert note.status == 201 and json.loads(note.body) == {"id": 1, "text": "hosted"}, server.output()
    assert server.stop(signal.SIGTERM) == 0, server.output()
    assert "fastapi example: store closed" in server.output()


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_asgi_request_tasks_started_at_once_behave_as_created_ones(m0_server, venv, loop):
    """The ASGI frontend runs a request's first step as it starts the Task
    (Task(eager_start=True) on 3.12+, the scheduled step taken on 3.10/3.11;
    on uvloop, whose loop takes no attribute, a plain Task before 3.12): on
    each the Task is the current one, has its own context, keeps its
    exception, is cancelled and comes from the loop's task factory as one
    made by loop.create_task()."""
    config = (f"frontend:\n  type: asgi\n  app: \"asgi_tasks:app\"\n  chdir: {venv['apps']}\n"
              f"executor:\n  type: asyncio\n  asyncio:\n    loops: 1\n    loop: {loop}\n")
    server = m0_server(config, program=venv["m0"], env=ENV)
    resp = m0test.request(server.port, "GET", "/task")
    assert (resp.status, resp.body) == (200, b"task=Task/True listed=True same_after_wait=True"), server.output()
    # Concurrent requests, each setting the variable in its own context.
    answers = {}

    def ask(value):
        answers[value] = m0test.request(server.port, "GET", f"/context?{value}").body.decode()

    clients = [threading.Thread(target=ask, args=(f"r{i}",)) for i in range(8)]
    for c in clients:
        c.start()
    for c in clients:
        c.join()
    assert answers == {f"r{i}": f"unset r{i}" for i in range(8)}, server.output()
    resp = m0test.request(server.port, "GET", "/woken")
    assert (resp.status, resp.body) == (200, b"woken by the loop"), server.output()
    for path in ("/raise-at-once", "/raise-later"):
        assert m0test.request(server.port, "GET", path).status == 500, (path, server.output())
    for message in ("raised in the first step", "raised after a wait"):
        assert f"RuntimeError: {message}" in server.output(), server.output()
    sock = server.open_request("/hang")
    with sock:
        resp = m0test.request(server.port, "GET", "/cancel-hung")
        assert (resp.status, resp.body) == (200, b"cancelled=True caught=True"), server.output()
        # The cancelled Task ends its request as any cancelled app does.
        assert m0test.ResponseReader(sock, timeout=m0test.scaled(10)).read().status == 500, server.output()
    # A task factory the app sets makes the requests' Tasks from then on.
    for path, body in (("/task-factory", b"Task"), ("/task", b"task=AppTask/True listed=True same_after_wait=True"),
                       ("/task-factory?off", b"AppTask"), ("/task", b"task=Task/True listed=True same_after_wait=True")):
        resp = m0test.request(server.port, "GET", path)
        assert (resp.status, resp.body) == (200, body), (path, server.output())
    assert server.stop(signal.SIGTERM) == 0, server.output()
    assert "0 task(s) still running were cancelled" in server.output(), server.output()


@contextlib.contextmanager
def steady_requests(server):
    """A client sending GET / one request after another (bounded) while the
    block runs; yields the list of their statuses (or errors)."""
    stop, answers = threading.Event(), []

    def load():
        while not stop.is_set() and len(answers) < 100000:
            try:
                answers.append(m0test.request(server.port, "GET", "/").status)
            except OSError as e:
                answers.append(repr(e))

    client = threading.Thread(target=load)
    client.start()
    try:
        yield answers
    finally:
        stop.set()
        client.join()


def test_two_workers_reload_on_sighup_and_drain_on_sigterm(m0_server, venv):
    server = m0_server(None, "--app", "flask_app:app", "--workers", "2", program=venv["m0"], cwd=venv["apps"],
                       env=ENV)
    pids = {m0test.request(server.port, "GET", "/").body.split()[1] for _ in range(8)}
    assert pids and all(p.startswith(b"pid=") for p in pids)
    # A reload runs `python -m m0 <the same arguments>` in place of the
    # supervisor (same pid), with new worker processes; a client sending
    # requests one after another all through it sees no error.
    with steady_requests(server) as answers:
        server.wait_until(lambda: len(answers) >= 20, what="requests before the reload")
        server.send_signal(signal.SIGHUP)
        server.wait_for_log("supervisor: reloaded: 2 new worker process(es) serve", timeout=60)
        before = len(answers)
        server.wait_until(lambda: len(answers) >= before + 20, what="requests after the reload")
    assert [a for a in answers if a != 200] == [], server.output()
    # SIGTERM drains: the request in flight is answered, then all exit 0.
    sock = server.open_request("/slow")
    server.send_signal(signal.SIGTERM)
    reply = m0test.ResponseReader(sock, timeout=m0test.scaled(10)).read()
    sock.close()
    assert reply.status == 200 and reply.body == b"slow done\n", server.output()
    assert server.wait(timeout=60) == 0, server.output()
    assert "every worker process has stopped" in server.output()
    assert "Traceback" not in server.output(), server.output()


def test_reload_as_python_dash_m_serves_an_edit_and_survives_a_syntax_error(m0_server, venv, tmp_path):
    """`python -m m0 MODULE:APP --reload` (issue 45): the hosted m0 reloads
    as `python -m m0` with the same arguments, one serving process."""
    app = tmp_path / "reload_app.py"
    source = 'def app(environ, start_response):\n    start_response("200 OK", [])\n    return [b"{}"]\n'
    app.write_text(source.format("before"))
    server = m0_server(None, "reload_app:app", "--reload", program=venv["python_m"], cwd=tmp_path,
                       env=dict(ENV, PYTHONDONTWRITEBYTECODE="1"))

    def serves(body):
        def answered():
            try:
                return m0test.request(server.port, "GET", "/").body == body
            except OSError:
                return False
        server.wait_until(answered, timeout=60, what=f"m0 to serve {body!r}")

    serves(b"before")
    app.write_text("def app(:\n")
    server.wait_for_log("reload refused", timeout=60)
    assert "SyntaxError" in server.output()
    serves(b"before")
    app.write_text(source.format("after the fix"))
    serves(b"after the fix")
    assert server.output().count("reload mode is for development") == 1


def test_max_requests_replaces_a_worker_by_a_fresh_fork(m0_server, venv):
    server = m0_server(None, "--app", "flask_app:app", "--workers", "2", "--set", "server.max_requests=30",
                       "--set", "server.max_requests_jitter=0", program=venv["m0"], cwd=venv["apps"], env=ENV)
    with steady_requests(server) as answers:
        server.wait_for_log(re.compile(r"serves; draining pid \d+, which it replaces \(it served "
                                       r"server.max_requests requests\)"), count=2, timeout=60)
    assert len(answers) >= 60 and [a for a in answers if a != 200] == [], server.output()
    assert server.stop(signal.SIGTERM) == 0, server.output()


def test_bad_input_gets_the_source_build_messages(venv, tmp_path):
    hosted = m0test.run_m0("--app", "no_such_module:app", "--listen", "127.0.0.1:0", program=venv["m0"],
                           env=ENV, cwd=str(venv["apps"]))
    assert hosted.returncode == 2, hosted.stderr
    assert "cannot load application 'no_such_module:app'" in hosted.stderr
    assert "ModuleNotFoundError: No module named 'no_such_module'" in hosted.stderr
    assert "m0 runs hosted in this Python" in hosted.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("server: {workers: 0}\n")
    hosted = m0test.run_m0("--config", str(bad), program=venv["python_m"], env=ENV)
    embedded = m0test.run_m0("--config", str(bad), env=ENV)
    assert hosted.returncode == embedded.returncode == 2
    assert hosted.stderr == embedded.stderr and "server.workers" in hosted.stderr, (hosted.stderr, embedded.stderr)


def test_pip_refuses_a_wheel_for_another_python(venv, wheel, tmp_path):
    v = re.search(r"-(cp\d+)-\1-", os.path.basename(wheel)).group(1)
    other = "cp312" if v != "cp312" else "cp311"
    foreign = tmp_path / os.path.basename(wheel).replace(f"-{v}-{v}-", f"-{other}-{other}-")
    shutil.copy(wheel, foreign)
    out = run([venv["bin"] / "pip", "install", "--disable-pip-version-check", "--no-deps", foreign], ok=False)
    assert out.returncode != 0
    assert "is not a supported wheel on this platform" in out.stderr, out.stderr


@pytest.fixture(scope="module")
def wheel_sdk(venv, tmp_path_factory):
    """The example plugins built against the SDK inside the wheel (`m0 sdk`)."""
    sdk = m0test.run_m0("sdk", "--prefix", program=venv["m0"], env=ENV)
    assert sdk.returncode == 0, sdk.stderr
    prefix = sdk.stdout.strip()
    cmake_dir = m0test.run_m0("sdk", "--cmake-dir", program=venv["m0"], env=ENV).stdout.strip()
    assert os.path.isfile(os.path.join(cmake_dir, "m0Config.cmake")), cmake_dir
    root = tmp_path_factory.mktemp("wheel-sdk")
    builds = {}
    for name in ("hello", "single", "condvar"):
        build_example(name, root / name, prefix)
        builds[name] = root / name
        # find_package(m0) found the wheel's package.
        assert f"m0_DIR:PATH={cmake_dir}" in (root / name / "CMakeCache.txt").read_text()
    return builds


def test_hello_plugin_builds_against_the_wheel_sdk(m0_server, venv, wheel_sdk):
    build = wheel_sdk["hello"]
    # The wheel's own command is named with the core's when one is mistyped.
    bogus = m0test.run_m0("sdkk", program=venv["m0"], env=ENV)
    assert bogus.returncode == 2
    assert "(did you mean 'sdk'?): the commands are 'plugins' and 'sdk'" in bogus.stderr, bogus.stderr
    listed = m0test.run_m0("plugins", program=venv["m0"], env={**ENV, "M0_PLUGIN_PATH": str(build)})
    line = [x for x in listed.stdout.splitlines() if "m0-frontend-hello.so" in x]
    assert len(line) == 1 and line[0].startswith("hello\tfrontend\t"), listed.stdout
    server = m0_server(f"plugins:\n  path: [{build}]\nfrontend:\n  type: hello\n", program=venv["m0"], env=ENV)
    resp = m0test.request(server.port, "GET", "/")
    assert resp.status == 200 and resp.body == b"Hello from a plugin!\n", server.output()
    assert server.stop(signal.SIGTERM) == 0, server.output()


def test_the_example_scheduler_builds_against_the_wheel_sdk(m0_server, venv, wheel_sdk):
    server = m0_server(f"plugins:\n  path: [{wheel_sdk['single']}]\n" + SINGLE, program=venv["m0"], env=ENV)
    assert "(scheduler single)" in server.output()
    assert m0test.request(server.port, "GET", "/hello").body == b"Hello, World!", server.output()
    assert server.stop(signal.SIGTERM) == 0, server.output()


def test_the_example_executor_builds_against_the_wheel_sdk_and_serves_wsgi(m0_server, venv, wheel_sdk):
    # The hosted m0 runs the app in the venv's Python, on the condvar threads.
    server = m0_server(condvar_config(wheel_sdk["condvar"]), program=venv["m0"], env=ENV)
    assert "executor condvar" in server.output()
    assert meet_side_by_side(server.port) == ["met on m0-condvar-0", "met on m0-condvar-1"], server.output()
    assert server.stop(signal.SIGTERM) == 0, server.output()


def test_django_startproject_with_the_admin_static_files(m0_server, venv):
    project = venv["root"] / "django"
    project.mkdir()
    run([venv["bin"] / "django-admin", "startproject", "mysite", project])
    static = run([venv["bin"] / "python", "-c", "import django.contrib.admin as a, os; "
                  "print(os.path.join(os.path.dirname(a.__file__), 'static'))"]).stdout.strip()
    server = m0_server(None, "--app", "mysite.wsgi", "--set", f"frontend.static=[{{prefix: /static/, root: '{static}'}}]",
                       program=venv["m0"], cwd=project, env=ENV)
    login = m0test.request(server.port, "GET", "/admin/login/")
    assert login.status == 200 and b"Django administration" in login.body, server.output()
    css = m0test.request(server.port, "GET", "/static/admin/css/base.css")
    assert css.status == 200 and css.header("Content-Type").startswith("text/css"), server.output()
    assert server.stop(signal.SIGTERM) == 0, server.output()


def test_realtime_chat_sse_and_websocket_holds_publish_through_the_package(m0_server, venv):
    """examples/flask/chat_app.py imports m0 and calls m0.publish(): hosted,
    that is the wheel's package, to which the running m0 added publish."""
    server = m0_server(os.path.join(m0test.SOURCE_DIR, "configs", "flask-realtime.yaml"), program=venv["m0"],
                       env=ENV)
    sock = server.connect(timeout=20)
    sock.sendall(b"GET /events?room=wheel HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    sse = StreamReader(sock, timeout=20)
    status, headers = sse.head()
    assert status == 200 and ("content-type", "text/event-stream") in headers, (status, headers)
    ws_url = f"ws://127.0.0.1:{server.port}/ws?room=wheel"
    with sock, connect(ws_url, open_timeout=m0test.scaled(10), ping_interval=None) as ws:
        said = m0test.request(server.port, "POST", "/say", body=urlencode({"room": "wheel", "text": "hi"}).encode(),
                              headers={"Content-Type": "application/x-www-form-urlencoded"})
        assert said.status == 204, server.output()
        expected = '{"room": "wheel", "text": "hi"}'
        assert sse.event() == {"event": "message", "data": expected}
        assert ws.recv(timeout=m0test.scaled(10)) == expected
        ws.send("over the socket")
        assert "over the socket" in ws.recv(timeout=m0test.scaled(10))
    assert server.stop(signal.SIGTERM) == 0, server.output()
