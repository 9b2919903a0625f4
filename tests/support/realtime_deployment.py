"""The deployment the realtime e2e tests serve: a WSGI app from a folder on
an executor, with a `realtime:` section."""


def wsgi_realtime_config(app, chdir, realtime="{}", threads=2, drain_timeout="10s", executor="pool"):
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
        f"realtime: {realtime}\n"
    )
