"""Starts a program the way systemd's socket activation does: the listening
sockets given as fds become fds 3, 4, ..., LISTEN_FDS says how many and
LISTEN_PID names the process they are for (this one: exec keeps the pid).

    python socket_activate.py FD[,FD...] PROGRAM [ARGS...]
"""
import fcntl
import os
import sys


def main():
    fds = [int(fd) for fd in sys.argv[1].split(",")]
    # Out of the way first: a given fd may sit at 3, 4, ...
    moved = [fcntl.fcntl(fd, fcntl.F_DUPFD, 3 + len(fds)) for fd in fds]
    for i, fd in enumerate(moved):
        os.dup2(fd, 3 + i, inheritable=True)
        os.close(fd)
    os.environ["LISTEN_FDS"] = str(len(fds))
    os.environ["LISTEN_PID"] = str(os.getpid())
    os.environ["LISTEN_FDNAMES"] = ":".join("web" for _ in fds)
    os.execv(sys.argv[2], sys.argv[2:])


if __name__ == "__main__":
    main()
