"""The ``m0`` command of the wheel: ``m0 sdk`` here, everything else in m0's core.

The core's command line (``m0 --help``) runs hosted in this interpreter and
owns the process from there: it exits with m0's exit code.
"""
import os
import platform
import sys

_PACKAGE = os.path.dirname(os.path.abspath(__file__))

_SDK_USAGE = """usage: m0 sdk [--prefix | --cmake-dir | --include-dir | --plugin-dir]

Where the m0 SDK of this installed wheel is, for building plugins out of tree:
  --prefix       give it to CMake as CMAKE_PREFIX_PATH (find_package(m0))
  --cmake-dir    the CMake package directory (m0_DIR)
  --include-dir  the SDK headers (m0/*.hpp)
  --plugin-dir   where the packaged plugins are (a built plugin can go in
                 M0_PLUGIN_PATH or plugins.path instead)
Without an option: all four, one 'name: path' per line.
A plugin must be built with the same compiler and Boost as this wheel
(`m0 --version` prints the build signature); m0 refuses any other.
"""


def sdk_paths():
    """The SDK's directories inside this installed package."""
    lib = os.path.join(_PACKAGE, "lib")
    return {
        "prefix": _PACKAGE,
        "cmake-dir": os.path.join(lib, "cmake", "m0"),
        "include-dir": os.path.join(_PACKAGE, "include"),
        "plugin-dir": os.path.join(lib, "m0", "plugins"),
    }


def _sdk(args):
    paths = sdk_paths()
    if not args:
        for name, path in paths.items():
            print(f"{name}: {path}")
        return 0
    if args in (["-h"], ["--help"]):
        print(_SDK_USAGE, end="")
        return 0
    if len(args) == 1 and args[0].startswith("--") and args[0][2:] in paths:
        print(paths[args[0][2:]])
        return 0
    sys.stderr.write(f"m0 sdk: unexpected argument(s) {' '.join(args)!r}\n{_SDK_USAGE}")
    return 2


def main(argv=None):
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] == ["sdk"]:
        return _sdk(args[1:])
    from m0 import _m0

    # What the app prints reaches a pipe or a log file line by line, as under
    # the binary (whose interpreter runs unbuffered); a worker process ends
    # without finalizing Python (docs/wheels.md).
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(line_buffering=True)
        except (AttributeError, ValueError, OSError):
            pass

    mode = f"hosted in CPython {platform.python_version()} ({sys.executable})"
    # A reload (SIGHUP) runs the same command again in place of this process:
    # through this interpreter, since the process is a Python.
    prefix = [sys.executable, "-m", "m0"]
    return _m0.run(["m0", *args], prefix, mode, sys.executable)
