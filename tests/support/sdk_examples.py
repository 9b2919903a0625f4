"""The out-of-tree example plugins (examples/hello-plugin,
examples/single-reactor-scheduler, examples/condvar-pool-executor) as the
SDK tests build and serve them, against the installed SDK
(tests/sdk/test_out_of_tree.py) and the wheel's (tests/python/test_wheel.py)."""
import os
import subprocess
import threading

import m0test

CMAKE = os.environ.get("M0_CMAKE", "cmake")
APPS = os.path.join(m0test.SOURCE_DIR, "tests", "sdk", "apps")

# name: (source directory, the plugin file its build makes)
EXAMPLES = {
    "hello": ("hello-plugin", "m0-frontend-hello.so"),
    "single": ("single-reactor-scheduler", "m0-scheduler-single.so"),
    "condvar": ("condvar-pool-executor", "m0-executor-condvar.so"),
}


def run(cmd, **kwargs):
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=m0test.scaled(600), **kwargs)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc


def build_example(name, build, prefix):
    """Configures and builds example `name` into `build` against the SDK at
    `prefix` (find_package(m0) through CMAKE_PREFIX_PATH); returns the
    plugin's path."""
    source = os.path.join(m0test.SOURCE_DIR, "examples", EXAMPLES[name][0])
    configure = [CMAKE, "-S", source, "-B", build, "-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_PREFIX_PATH={prefix}"]
    # The same compiler as m0, or the loader refuses the build signature.
    if os.environ.get("M0_CXX_COMPILER"):
        configure.append(f"-DCMAKE_CXX_COMPILER={os.environ['M0_CXX_COMPILER']}")
    if os.environ.get("M0_CMAKE_GENERATOR"):
        configure += ["-G", os.environ["M0_CMAKE_GENERATOR"]]
    if os.environ.get("M0_CMAKE_MAKE_PROGRAM"):
        configure.append(f"-DCMAKE_MAKE_PROGRAM={os.environ['M0_CMAKE_MAKE_PROGRAM']}")
    run(configure)
    run([CMAKE, "--build", build])
    plugin = os.path.join(build, EXAMPLES[name][1])
    assert os.path.isfile(plugin), plugin
    return plugin


# One reactor under the `single` scheduler, a fixed route and a slow one.
SINGLE = """
server:
  threads: 1
scheduler:
  type: single
frontend:
  type: http
  routes:
    - {path: /hello, body: "Hello, World!"}
    - {path: /slow, body: "slow done", delay: 500ms}
"""


def condvar_config(build, threads=2):
    """tests/sdk/apps/condvar_app.py on the `condvar` executor built in `build`."""
    return f"""
plugins:
  path: [{build}]
executor:
  type: condvar
  condvar: {{threads: {threads}}}
frontend: {{type: wsgi, app: "condvar_app:app", chdir: {APPS}}}
"""


def meet_side_by_side(port):
    """Two requests to /meet at once, each of which returns only once the
    other is inside the view too; their bodies, sorted ("met on <thread>")."""
    answers = []
    clients = [threading.Thread(target=lambda: answers.append(m0test.request(port, path="/meet", timeout=60)))
               for _ in range(2)]
    for c in clients:
        c.start()
    for c in clients:
        c.join()
    return sorted(a.body.decode() for a in answers)
