"""The deployment many e2e tests serve: a WSGI app from a folder on an
executor, with a `realtime:` section when given."""


def wsgi_config(app, chdir, drain_timeout="10s", threads=2, executor="pool", realtime=None):
    pool = f"  pool: {{threads: {threads}, max_threads: {threads}}}\n" if executor == "pool" else ""
    return (
        "server:\n"
        f"  drain_timeout: {drain_timeout}\n"
        "frontend:\n"
        "  type: wsgi\n"
        f"  app: \"{app}\"\n"
        f"  chdir: {chdir}\n"
        "executor:\n"
        f"  type: {executor}\n"
        f"{pool}"
        + (f"realtime: {realtime}\n" if realtime is not None else "")
    )
