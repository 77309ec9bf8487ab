"""The RPC server: ``ember-rpc-server`` / ``python -m ember.rpc.server``.

It is part of the runtime and needs no compiler: a board with numpy, ember's
runtime and a C compiler (only to load ``.tar`` libraries) can serve. Each
connection runs in a process of its own, forked from the listener, with its
own workspace directory under the server's root: a library that crashes or
hangs takes down its session, never the server or the other sessions, and
every library a session loaded is gone with its process. The listener keeps
no per-session state but the child's pid and workspace, which it removes when
the child exits, however it exits.

The server runs code that clients upload, by design. Whom to expose it to,
and what the key does and does not protect, is in ``docs/rpc.md``.

    ember-rpc-server --host 127.0.0.1 --port 9090 [--key KEY | $EMBER_RPC_KEY]
"""

import argparse
import ipaddress
import logging
import os
import select
import shutil
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Sequence

from . import protocol as p
from .session import Limits, ServerSession

log = logging.getLogger("ember.rpc.server")


class Server:
    """An RPC server listening on ``host:port``; ``serve_forever`` serves it.

    Args:
        host: the address to bind; loopback unless you mean to expose it.
        port: the TCP port; 0 picks a free one (read ``address``).
        key: a shared secret clients must prove they know, or None.
        workspace: the directory under which session workspaces are made
            (default: the system's temporary directory).
        max_sessions: sessions served at once; more are refused with a reply.
        limits: frame, workspace and memory limits, and the idle timeout.

    Sessions run in forked processes, so create and serve a Server in a
    process without other threads (the command line does).

    Example:
        >>> server = Server("127.0.0.1", 0)  # doctest: +SKIP
        >>> server.serve_forever()  # doctest: +SKIP
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = p.DEFAULT_PORT,
        key: str | None = None,
        workspace: str | None = None,
        max_sessions: int = 16,
        limits: Limits | None = None,
    ):
        self.key = key
        self.limits = limits if limits is not None else Limits()
        self.max_sessions = max_sessions
        self.listener = socket.create_server((host, port), backlog=64)
        self.address: tuple[str, int] = self.listener.getsockname()[:2]
        self.root = tempfile.mkdtemp(prefix="ember-rpc-", dir=workspace)
        self.sessions: dict[int, tuple[str, str]] = {}  # pid -> (name, workspace)
        self.count = 0
        self.stopping = False

    def serve_forever(self) -> None:
        """Accept and serve clients until ``stop()`` or SIGTERM/SIGINT."""
        try:
            while not self.stopping:
                ready, _, _ = select.select([self.listener], [], [], 0.5)
                self.reap()
                if ready:
                    try:
                        conn, peer = self.listener.accept()
                    except OSError as e:  # e.g. out of file descriptors
                        log.error("accept failed: %s", e)
                        continue
                    self.start_session(conn, peer)
        finally:
            self.close()

    def stop(self) -> None:
        self.stopping = True

    def start_session(self, conn: socket.socket, peer) -> None:
        where = f"{peer[0]}:{peer[1]}"
        if len(self.sessions) >= self.max_sessions:
            log.warning(
                "%s refused: %d sessions already running", where, len(self.sessions)
            )
            _refuse(conn, f"server busy: {len(self.sessions)} sessions running")
            return
        self.count += 1
        name = f"session {self.count} ({where})"
        # Out of disk, processes or memory: this client is refused, the
        # listener goes on serving the others.
        try:
            workspace = tempfile.mkdtemp(prefix=f"session-{self.count}-", dir=self.root)
        except OSError as e:
            log.error("%s: refused: cannot make its workspace: %s", name, e)
            _refuse(conn, f"the server cannot start a session: {e.strerror or e}")
            return
        # Signals stay blocked across the fork until the child has its own handlers.
        stops = {signal.SIGTERM, signal.SIGINT}
        signal.pthread_sigmask(signal.SIG_BLOCK, stops)
        try:
            pid = os.fork()
            if pid == 0:
                self._run_child(conn, workspace, name, stops)
        except OSError as e:
            log.error("%s: refused: cannot start its process: %s", name, e)
            shutil.rmtree(workspace, ignore_errors=True)
            _refuse(conn, f"the server cannot start a session: {e.strerror or e}")
            return
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, stops)
        conn.close()
        self.sessions[pid] = (name, workspace)
        log.info("%s: connected (pid %d)", name, pid)

    def _run_child(
        self, conn: socket.socket, workspace: str, name: str, stops: set
    ) -> None:
        """The session's process: serve, clean up, and always end in ``os._exit``
        so that nothing unwinds into the listener's code."""
        code = 1
        try:
            # The default actions, not Python handlers: a handler runs only
            # between bytecodes, never while a library's function runs.
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, stops)
            self.listener.close()
            os.environ["TMPDIR"] = tempfile.tempdir = os.path.join(workspace, "tmp")
            ServerSession(conn, workspace, self.key, self.limits, name).run()
            code = 0
        except OSError as e:
            log.info("%s: connection lost: %s", name, e)
            code = 0
        except BaseException as e:  # noqa: BLE001 - logged, then the process ends
            log.error("%s: %s: %s", name, type(e).__name__, e)
        finally:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            conn.close()
            shutil.rmtree(workspace, ignore_errors=True)
            logging.shutdown()
            os._exit(code)

    def reap(self) -> None:
        """Collect finished sessions and remove their workspaces."""
        while self.sessions:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            name, workspace = self.sessions.pop(pid, ("session ?", None))
            if workspace:
                shutil.rmtree(workspace, ignore_errors=True)
            if os.WIFSIGNALED(status):
                sig = signal.Signals(os.WTERMSIG(status)).name
                log.error("%s: its process died of %s", name, sig)
            else:
                log.info("%s: ended", name)

    def close(self, grace: float = 2.0) -> None:
        """Stop the sessions, remove every workspace and close the socket.

        Sessions get SIGTERM; one still running ``grace`` seconds later (a
        library that blocks the signal) gets SIGKILL."""
        self.listener.close()
        for pid in self.sessions:
            _signal(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while self.sessions and time.monotonic() < deadline:
            for pid in list(self.sessions):
                if _ended(pid, os.WNOHANG):
                    del self.sessions[pid]
            time.sleep(0.01)
        for pid, (name, _) in self.sessions.items():
            log.warning("%s: still running %g s after SIGTERM; killed", name, grace)
            _signal(pid, signal.SIGKILL)
            _ended(pid, 0)
        self.sessions.clear()
        shutil.rmtree(self.root, ignore_errors=True)


def _refuse(conn: socket.socket, message: str) -> None:
    """Tell a client why it is not served, then close its connection."""
    try:
        conn.settimeout(1.0)
        p.send(conn, p.MsgType.ERROR, p.error_header(p.RPCError(message)))
    except OSError:
        pass
    conn.close()


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def _ended(pid: int, flags: int) -> bool:
    """Whether child ``pid`` has ended (and is now reaped)."""
    try:
        return os.waitpid(pid, flags)[0] != 0
    except ChildProcessError:
        return True


def _exit_on_signal(signum, frame) -> None:
    raise SystemExit(128 + signum)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _positive(kind):
    def parse(text: str):
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"expected a positive number, got {text}")
        return value

    return parse


def _port(text: str) -> int:
    port = int(text)
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port from 0 to 65535, got {text}")
    return port


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ember-rpc-server",
        description="Serve ember RPC sessions: clients upload libraries, load, run "
        "and time them here. The server runs the code it is sent; expose it only "
        "to people you would give a shell (see docs/rpc.md).",
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)"
    )
    parser.add_argument(
        "--port",
        type=_port,
        default=p.DEFAULT_PORT,
        help="TCP port; 0 picks a free one",
    )
    parser.add_argument(
        "--key",
        default=os.environ.get("EMBER_RPC_KEY"),
        help="shared key clients must know (default $EMBER_RPC_KEY)",
    )
    parser.add_argument(
        "--workspace", help="directory for session workspaces (default: system temp)"
    )
    parser.add_argument("--max-sessions", type=_positive(int), default=16)
    parser.add_argument(
        "--max-frame-bytes", type=_positive(int), default=p.DEFAULT_MAX_FRAME_BYTES
    )
    parser.add_argument(
        "--max-workspace-bytes",
        type=_positive(int),
        default=p.DEFAULT_MAX_WORKSPACE_BYTES,
    )
    parser.add_argument(
        "--max-memory-bytes", type=_positive(int), default=p.DEFAULT_MAX_MEMORY_BYTES
    )
    parser.add_argument(
        "--idle-timeout",
        type=_positive(float),
        default=600.0,
        help="seconds a session may wait for its client (default 600)",
    )
    parser.add_argument(
        "-q", "--quiet", action="store_true", help="log only warnings and errors"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING if args.quiet else logging.INFO,
        format="%(asctime)s ember-rpc-server[%(process)d] %(levelname)s %(message)s",
        stream=sys.stderr,
    )
    if args.max_frame_bytes < 1 << 17:
        print(
            "ember-rpc-server: error: --max-frame-bytes must be at least 131072",
            file=sys.stderr,
        )
        return 2
    limits = Limits(
        args.max_frame_bytes,
        args.max_workspace_bytes,
        args.max_memory_bytes,
        args.idle_timeout,
    )
    try:
        server = Server(
            args.host,
            args.port,
            args.key or None,
            args.workspace,
            args.max_sessions,
            limits,
        )
    except OSError as e:
        print(
            f"ember-rpc-server: error: cannot listen on {args.host}:{args.port}: {e.strerror or e}",
            file=sys.stderr,
        )
        return 1
    if not is_loopback(args.host):
        log.warning(
            "listening on %s, reachable from other machines: anyone who can connect%s "
            "can run code here as this user",
            args.host,
            "" if args.key is None else " and knows the key",
        )
    if args.key is None:
        log.info("no key: any client that can connect is served")
    host, port = server.address
    print(f"ember-rpc-server: listening on {host}:{port}", flush=True)
    signal.signal(signal.SIGTERM, _exit_on_signal)
    try:
        server.serve_forever()
    except (KeyboardInterrupt, SystemExit):
        pass
    log.info("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
