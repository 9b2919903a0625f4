"""m0, installed as a wheel: a plugin-based server for Python web applications.

Run it with the ``m0`` command or ``python -m m0``; it serves with this very
interpreter (hosted), so the running venv is the app's venv. While m0 serves,
applications use this module's ``publish(channel, data, *, event=None)``,
which the running server adds (see docs/wheels.md).
"""

__version__ = "0.3.0"


def main(argv=None):
    """The ``m0`` command: ``m0 --help``. Never returns while it serves."""
    from m0._cli import main as cli_main

    return cli_main(argv)
