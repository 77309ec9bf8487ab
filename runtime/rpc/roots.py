"""A server's root: the directory under its ``--workspace`` that holds its
sessions' workspaces, and how a server that was killed is cleaned up after.

The listener keeps ``<root>/.lock`` locked with ``flock``; its session
processes inherit the descriptor, so the lock is held while any process of
that server lives and released by the kernel when the last one ends, however
it ends. A root whose lock can be taken belongs to nobody: the next server
started on the same ``--workspace`` removes it. (A pid file would need the
pid checked against reuse; a lock cannot outlive its holders.)
"""

import fcntl
import logging
import os
import shutil
import tempfile

log = logging.getLogger("ember.rpc.server")

LOCK = ".lock"
"""The lock file in a server's root, held (``flock``) by its processes."""


def make_root(parent: str) -> tuple[str, int]:
    """Remove the stale roots under ``parent``, then make this server's root
    (mode 0700) and lock it.

    Returns:
        The root's path and the locked descriptor (close it after removing
        the root).
    """
    remove_stale_roots(parent)
    root = tempfile.mkdtemp(prefix="ember-rpc-", dir=parent)
    return root, _lock(root)


def _lock(root: str) -> int:
    """Lock ``root`` for this server and its sessions (they inherit the
    descriptor); the file appears under its name already locked."""
    part = os.path.join(root, f"{LOCK}-{os.getpid()}")
    fd = os.open(part, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.write(fd, f"{os.getpid()}\n".encode())
    os.rename(part, os.path.join(root, LOCK))
    return fd


def remove_stale_roots(parent: str) -> None:
    """Remove the server roots under ``parent`` whose lock no process holds:
    their server and all its sessions are gone (killed, or the machine
    stopped), and nobody else would remove them."""
    try:
        entries = [
            e
            for e in os.scandir(parent)
            if e.name.startswith("ember-rpc-") and e.is_dir(follow_symlinks=False)
        ]
    except OSError:
        return
    for entry in entries:
        try:
            fd = os.open(
                os.path.join(entry.path, LOCK), os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW
            )
        except OSError:  # not a server root, not ours, or not locked yet
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # its server or a session of it still runs
            os.close(fd)
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        log.warning("removed %s, left by a server that is gone", entry.path)
        os.close(fd)
