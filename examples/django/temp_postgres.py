#!/usr/bin/env python3
"""A throwaway PostgreSQL server for the shop pages: initdb into a temporary
directory, listening on a unix socket in that directory only (no TCP port),
the example's database made and migrated, everything stopped and removed at
the end. Needs Debian's `postgresql` package (its binaries, not its
service). As root the server runs as the `postgres` user (initdb refuses
root).

Used by the tests and bench/django_pg; by hand:

  .venv/bin/python examples/django/temp_postgres.py     # prints the env, serves until Ctrl-C
"""
import glob
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DATABASE = "m0example"


def bin_dir():
    """Debian's newest PostgreSQL server binaries, or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return os.path.dirname(found[-1]) if found else None


class TempPostgres:
    """A PostgreSQL server in a temporary directory; a context manager."""

    def __init__(self, max_connections=100):
        self.max_connections = max_connections
        self.bin = bin_dir()
        if self.bin is None:
            raise RuntimeError("PostgreSQL not found (Debian package `postgresql`; scripts/setup installs it)")
        self.dir = None
        self.as_user = []  # prefix running the server's commands as its owner
        self.started = False

    def _run(self, tool, *args):
        cmd = self.as_user + [os.path.join(self.bin, tool), *args]
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"{tool} failed ({out.returncode}): {out.stdout}{out.stderr}")
        return out.stdout

    def start(self):
        self.dir = tempfile.mkdtemp(prefix="m0-postgres-")
        if os.geteuid() == 0:
            owner = pwd.getpwnam("postgres")
            os.chown(self.dir, owner.pw_uid, owner.pw_gid)
            self.as_user = ["runuser", "-u", "postgres", "--"]
        data = os.path.join(self.dir, "data")
        self._run("initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync",
                  "--no-instructions")
        options = (f"-c listen_addresses='' -c unix_socket_directories='{self.dir}' "
                   f"-c max_connections={self.max_connections}")
        self._run("pg_ctl", "-D", data, "-o", options, "-l", os.path.join(self.dir, "server.log"), "-w", "start")
        self.started = True
        self._run("createdb", "-h", self.dir, "-U", "postgres", DATABASE)
        return self

    def env(self):
        """What the example's settings read to use this server."""
        return {"DJANGO_DB": "postgresql", "PGHOST": self.dir, "PGUSER": "postgres", "PGDATABASE": DATABASE}

    def query(self, sql):
        """psql's unaligned output of one statement."""
        return self._run("psql", "-h", self.dir, "-U", "postgres", "-d", DATABASE, "-At", "-c", sql).strip()

    def stop(self):
        if self.started:
            self._run("pg_ctl", "-D", os.path.join(self.dir, "data"), "-m", "fast", "-w", "stop")
            self.started = False
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def migrate(python, env):
    """Makes and fills the example's tables with `manage.py migrate`, run by
    `python` (the venv with Django) under `env` (the database's settings)."""
    subprocess.run([python, os.path.join(HERE, "manage.py"), "migrate", "--verbosity", "0"],
                   env=dict(os.environ, **env), check=True, cwd=HERE)


def main():
    with TempPostgres() as pg:
        migrate(sys.executable, pg.env())
        print(" ".join(f"{k}={v}" for k, v in pg.env().items()), flush=True)
        print("PostgreSQL is serving (Ctrl-C stops it and removes its files)", file=sys.stderr, flush=True)
        try:
            signal.pause()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
