"""The RPC server: ``ember-rpc-server`` / ``python -m ember.rpc.server``.

It is part of the runtime and needs no compiler: a board with numpy, ember's
runtime and a C compiler (only to load ``.tar`` libraries) can serve.

The listener runs every connection's handshake itself, many at once and
without blocking (``handshake``): a connection that has not authenticated
holds a socket and nothing else, at most ``max_pending`` of them wait at once
(a new one pushes out the oldest), and each has 10 s to authenticate. Only a
client that has passed gets a session: a process of its own, forked from the
listener, with its own workspace directory under the server's root. A library
that crashes or hangs takes down its session, never the server or the other
sessions, and every library a session loaded is gone with its process. The
listener keeps no per-session state but the child's pid and workspace, which
it removes when the child exits, however it exits. Session processes die with
the listener (on Linux, ``PR_SET_PDEATHSIG``), and a server's root holds a
lock for as long as one of its processes lives: a new server removes the
roots whose lock nobody holds, left by a server that was killed.

The server runs code that clients upload, by design. Whom to expose it to,
and what the key does and does not protect, is in ``docs/rpc.md``.

    ember-rpc-server --host 127.0.0.1 --port 9090 [$EMBER_RPC_KEY | --key-file PATH]
"""

import argparse
import ctypes
import importlib.metadata
import ipaddress
import logging
import os
import selectors
import shutil
import signal
import socket
import stat
import sys
import tempfile
import time
from collections.abc import Sequence

from . import protocol as p
from .handshake import Handshake, Refused
from .roots import make_root
from .session import Limits, ServerSession

log = logging.getLogger("ember.rpc.server")

MIN_KEY_BYTES = 16
"""The shortest key a server accepts: anyone who records a handshake can test
guesses offline, so a key must be too long to guess."""
_PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform == "linux" else None


class Server:
    """An RPC server listening on ``host:port``; ``serve_forever`` serves it.

    Args:
        host: the address to bind; loopback unless you mean to expose it.
        port: the TCP port; 0 picks a free one (read ``address``).
        key: a shared secret of at least 16 bytes clients must prove they
            know, or None (see ``insecure_no_key``).
        workspace: the directory under which the server makes its root, where
            session workspaces are made (default: the system's temporary
            directory). Roots left there by a server that is gone are removed.
        max_sessions: sessions served at once; more are refused with a reply.
        limits: frame, workspace and memory limits, and the idle timeout.
        max_pending: connections waiting to authenticate at once; one more
            pushes out the oldest.
        insecure_no_key: serve an address beyond loopback without a key,
            which lets anyone who can connect run code as this user.

    Raises:
        ValueError: a key shorter than 16 bytes (UTF-8), or no key for an
            address beyond loopback without ``insecure_no_key``.
        OSError: the address cannot be bound.

    Sessions run in forked processes, so create and serve a Server in a
    process without other threads (the command line does).

    Example:
        >>> server = Server("127.0.0.1", 0, key=os.environ["EMBER_RPC_KEY"])  # doctest: +SKIP
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
        max_pending: int = 128,
        insecure_no_key: bool = False,
    ):
        check_key(key)
        self.key = key
        self.limits = limits if limits is not None else Limits()
        self.max_sessions = max_sessions
        self.max_pending = max_pending
        # Decided from the address as given, before anything listens: a host
        # name other than "localhost" counts as reachable from elsewhere.
        exposed = not is_loopback(host)
        if exposed and key is None and not insecure_no_key:
            raise ValueError(
                f"refusing to listen on {host or '*'} without a key: anyone who can "
                "connect could run code here as this user; give a key, listen on "
                "loopback, or accept that with --insecure-no-key (insecure_no_key=True)"
            )
        self.listener = socket.create_server((host, port), backlog=128)
        self.address: tuple[str, int] = self.listener.getsockname()[:2]
        if exposed:
            log.warning(
                "listening on %s, reachable from other machines: anyone who can "
                "connect%s can run code here as this user",
                host or "*",
                "" if key is None else " and knows the key",
            )
        if key is None:
            log.warning(
                "no key: any client that can connect is served and can run code "
                "here as this user"
            )
        parent = workspace if workspace is not None else tempfile.gettempdir()
        try:
            self.root, self.lock = make_root(parent)
        except OSError:
            self.listener.close()
            raise
        self.pid = os.getpid()
        self.sessions: dict[int, tuple[str, str]] = {}  # pid -> (name, workspace)
        self.pending: dict[socket.socket, Handshake] = {}  # oldest first
        self.selector = selectors.DefaultSelector()
        self.listener.setblocking(False)
        self.selector.register(self.listener, selectors.EVENT_READ)
        self.count = 0
        self.pushed_out = 0
        self.pushed_out_logged = 0.0
        self.stopping = False

    def serve_forever(self) -> None:
        """Accept and serve clients until ``stop()`` or SIGTERM/SIGINT."""
        try:
            while not self.stopping:
                wait = 0.5
                if self.pending:
                    first = next(iter(self.pending.values())).deadline
                    wait = max(0.0, min(wait, first - time.monotonic()))
                for key, events in self.selector.select(wait):
                    if key.fileobj is self.listener:
                        self.accept()
                    elif self.pending.get(key.data.conn) is key.data:
                        self.advance(key.data, events)
                self.expire()
                self.reap()
        finally:
            self.close()

    def stop(self) -> None:
        self.stopping = True

    def accept(self) -> None:
        """Take the connections waiting in the backlog and start their handshakes."""
        for _ in range(64):  # then the others' handshakes get a turn
            try:
                conn, peer = self.listener.accept()
            except BlockingIOError:
                return
            except OSError as e:  # e.g. out of file descriptors
                log.error("accept failed: %s", e)
                return
            self.count += 1
            name = f"session {self.count} ({peer[0]}:{peer[1]})"
            if len(self.sessions) >= self.max_sessions:
                self.reap()  # sessions that ended since the loop last looked
            if len(self.sessions) >= self.max_sessions:
                log.warning(
                    "%s refused: %d sessions already running", name, len(self.sessions)
                )
                _refuse(conn, f"server busy: {len(self.sessions)} sessions running")
                continue
            if len(self.pending) >= self.max_pending:
                self.push_out_oldest()
            try:
                handshake = Handshake(
                    conn, name, self.key, self.limits, time.monotonic()
                )
            except OSError as e:
                log.info("%s: connection lost before AUTH: %s", name, e)
                conn.close()
                continue
            self.pending[conn] = handshake
            events = selectors.EVENT_READ
            if handshake.out:
                events |= selectors.EVENT_WRITE
            self.selector.register(conn, events, handshake)

    def push_out_oldest(self) -> None:
        """Drop the oldest connection waiting to authenticate. The log says so
        once, then counts (a flood of connections must not flood the log)."""
        oldest = next(iter(self.pending.values()))
        self.drop(oldest, "refused: too many connections wait to authenticate")
        self.pushed_out += 1
        now = time.monotonic()
        if self.pushed_out == 1 or now - self.pushed_out_logged > 5.0:
            log.warning(
                "%s: dropped, the oldest of %d connections waiting to authenticate "
                "(%d dropped so far)",
                oldest.name,
                self.max_pending,
                self.pushed_out,
            )
            self.pushed_out_logged = now

    def advance(self, handshake: Handshake, events: int) -> None:
        """Go on with a handshake whose socket is ready; start its session
        once it has authenticated."""
        try:
            if events & selectors.EVENT_WRITE:
                handshake.write()
                if not handshake.out:
                    self.selector.modify(
                        handshake.conn, selectors.EVENT_READ, handshake
                    )
            if not (events & selectors.EVENT_READ and handshake.read()):
                return
        except Refused as e:
            log.warning("%s: %s", handshake.name, e.log)
            self.drop(handshake, str(e))
            return
        except (OSError, p.ConnectionClosed) as e:
            log.info("%s: connection lost before AUTH: %s", handshake.name, e)
            self.drop(handshake)
            return
        self.selector.unregister(handshake.conn)
        del self.pending[handshake.conn]
        handshake.conn.setblocking(True)
        self.start_session(handshake.conn, handshake.name)

    def drop(self, handshake: Handshake, reply: str | None = None) -> None:
        self.selector.unregister(handshake.conn)
        del self.pending[handshake.conn]
        if reply is None:
            handshake.conn.close()
        else:
            handshake.refuse(reply)

    def expire(self) -> None:
        """Refuse the handshakes past their deadline (the oldest come first)."""
        now = time.monotonic()
        while self.pending:
            handshake = next(iter(self.pending.values()))
            if handshake.deadline > now:
                return
            refusal = handshake.expired()
            log.warning("%s: %s", handshake.name, refusal.log)
            self.drop(handshake, str(refusal))

    def start_session(self, conn: socket.socket, name: str) -> None:
        if len(self.sessions) >= self.max_sessions:
            self.reap()
        if len(self.sessions) >= self.max_sessions:
            log.warning(
                "%s refused: %d sessions already running", name, len(self.sessions)
            )
            _refuse(conn, f"server busy: {len(self.sessions)} sessions running")
            return
        number = name.split()[1]
        # Out of disk, processes or memory: this client is refused, the
        # listener goes on serving the others.
        try:
            workspace = tempfile.mkdtemp(prefix=f"session-{number}-", dir=self.root)
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
        log.info("%s: authenticated (pid %d)", name, pid)

    def _run_child(
        self, conn: socket.socket, workspace: str, name: str, stops: set
    ) -> None:
        """The session's process: serve, clean up, and always end in ``os._exit``
        so that nothing unwinds into the listener's code."""
        code = 1
        try:
            _die_with(self.pid)
            # The default actions, not Python handlers: a handler runs only
            # between bytecodes, never while a library's function runs.
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, stops)
            # The other clients' sockets are the listener's alone: closing
            # these copies leaves the listener's selector as it was.
            self.listener.close()
            for other in self.pending:
                other.close()
            self.selector.close()
            os.environ["TMPDIR"] = tempfile.tempdir = os.path.join(workspace, "tmp")
            ServerSession(conn, workspace, self.limits, name).run()
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
        """Stop the sessions, remove every workspace and close the sockets.

        Sessions get SIGTERM; one still running ``grace`` seconds later (a
        library that blocks the signal) gets SIGKILL."""
        self.listener.close()
        for conn in self.pending:
            conn.close()
        self.pending.clear()
        self.selector.close()
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
        if self.lock >= 0:
            os.close(self.lock)
            self.lock = -1


def check_key(key: str | None) -> None:
    """Refuse a key too short to resist guessing (``MIN_KEY_BYTES``).

    Raises:
        ValueError: naming the rule and how to make a good key.
    """
    if key is not None and len(key.encode()) < MIN_KEY_BYTES:
        raise ValueError(
            f"the key is {len(key.encode())} bytes; a key must be at least "
            f"{MIN_KEY_BYTES} bytes (make one with: python3 -c 'import secrets; "
            "print(secrets.token_hex(32))')"
        )


def _die_with(parent: int) -> None:
    """Have the kernel kill this process when the listener dies; if it has
    died already (before the request), end now."""
    if _LIBC is not None and _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0):
        log.warning("prctl(PR_SET_PDEATHSIG): %s", os.strerror(ctypes.get_errno()))
    if os.getppid() != parent:
        os._exit(1)


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
    keys = parser.add_mutually_exclusive_group()
    keys.add_argument(
        "--key-file",
        metavar="PATH",
        help="read the shared key clients must know from this file (its first "
        "line; default: $EMBER_RPC_KEY); at least 16 bytes",
    )
    keys.add_argument(
        "--key",
        help="the key itself; warns, since every user of this machine can read a "
        "command line (ps): prefer $EMBER_RPC_KEY or --key-file",
    )
    parser.add_argument(
        "--insecure-no-key",
        action="store_true",
        help="serve an address beyond loopback without a key: anyone who can "
        "connect runs code here as this user",
    )
    parser.add_argument(
        "--workspace", help="directory for session workspaces (default: system temp)"
    )
    parser.add_argument("--max-sessions", type=_positive(int), default=16)
    parser.add_argument(
        "--max-pending",
        type=_positive(int),
        default=128,
        help="connections waiting to authenticate at once; one more pushes out "
        "the oldest (default 128)",
    )
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
    parser.add_argument(
        "--version", action="version", version=f"ember-rpc-server {_version()}"
    )
    return parser


def _version() -> str:
    """The distribution and its version: ember's, or ember-runtime's when only
    the runtime is installed (``ember`` is then a namespace package without a
    version)."""
    try:
        from ember import __version__  # the package, not the compiler
    except ImportError:
        return f"(ember-runtime) {importlib.metadata.version('ember-runtime')}"
    return f"(ember) {__version__}"


def _key(args: argparse.Namespace) -> str | None:
    """The key from --key, --key-file or $EMBER_RPC_KEY (an empty variable is none).

    Raises:
        ValueError: an unreadable key file.
    """
    if args.key is not None:
        log.warning(
            "--key puts the key on the command line, where every user of this "
            "machine can read it (ps); use $EMBER_RPC_KEY or --key-file"
        )
        return args.key
    if args.key_file is None:
        return os.environ.get("EMBER_RPC_KEY") or None
    try:
        with open(args.key_file, encoding="utf-8") as f:
            mode = os.fstat(f.fileno()).st_mode
            key = f.readline().rstrip("\r\n")
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"cannot read --key-file {args.key_file}: {e}") from None
    if mode & (stat.S_IRGRP | stat.S_IROTH):
        log.warning(
            "%s can be read by other users (mode %o): chmod 600 it",
            args.key_file,
            stat.S_IMODE(mode),
        )
    return key


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
        key = _key(args)
        server = Server(
            args.host,
            args.port,
            key,
            args.workspace,
            args.max_sessions,
            limits,
            args.max_pending,
            args.insecure_no_key,
        )
    except ValueError as e:
        print(f"ember-rpc-server: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(
            f"ember-rpc-server: error: cannot listen on {args.host}:{args.port}: {e.strerror or e}",
            file=sys.stderr,
        )
        return 1
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
