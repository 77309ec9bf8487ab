"""The server's side of the handshake, run by the listener for many
connections at once: HELLO out, one AUTH frame in, the digest checked.

A connection costs the listener a socket and a few hundred bytes until it has
authenticated; it gets a session process, a slot and a workspace only then
(``server``). Nothing here blocks: the listener calls ``write`` and ``read``
when its selector says the socket is ready, and drops a handshake that is not
done by its deadline. Each read asks for no more than the AUTH frame's
remaining bytes, so whatever the client sends after it stays in the socket for
the session.
"""

import hmac
import platform
import secrets
import socket

from . import protocol as p
from .protocol import MsgType, RPCError

AUTH_FRAME_BYTES = 4096
"""The largest AUTH frame the listener reads."""
AUTH_SECONDS = 10.0
"""How long a client has, from its connection, to send its whole AUTH frame
(or the idle timeout, if shorter)."""


class Refused(RPCError):
    """A handshake that failed: ``args[0]`` is the reply to the client,
    ``log`` what the server's log says."""

    def __init__(self, reply: str, log: str):
        super().__init__(reply)
        self.log = log


class Handshake:
    """One connection between its accept and its AUTH frame.

    Args:
        conn: the accepted socket (made non-blocking here).
        name: the name the log gives the connection, and its session.
        key: the server's key, or None.
        limits: the server's limits (``session.Limits``), sent in HELLO.
        now: ``time.monotonic()`` at accept; the deadline counts from it.
    """

    def __init__(self, conn: socket.socket, name: str, key: str | None, limits, now):
        self.conn = conn
        self.name = name
        self.key = key
        self.nonce = secrets.token_bytes(32)
        wait = min(limits.idle_timeout or AUTH_SECONDS, AUTH_SECONDS)
        self.deadline = now + wait
        self.head = bytearray()
        self.payload: bytearray | None = None
        self.length = 0
        self.type = 0
        hello = {
            "version": p.VERSION,
            "nonce": self.nonce.hex(),
            "key_required": key is not None,
            "max_frame_bytes": limits.max_frame_bytes,
            "max_workspace_bytes": limits.max_workspace_bytes,
            "max_memory_bytes": limits.max_memory_bytes,
            "machine": platform.machine(),
            "system": platform.system(),
        }
        self.out = memoryview(p.frame_head(MsgType.HELLO, hello, 0))
        conn.setblocking(False)
        self.write()

    def write(self) -> None:
        """Send what the socket takes of the HELLO not yet sent."""
        try:
            sent = self.conn.send(self.out)
        except BlockingIOError:
            return
        self.out = self.out[sent:]

    def read(self) -> bool:
        """Read what has arrived of the AUTH frame; True once it is whole and
        its digest is right.

        Raises:
            Refused: anything but a valid AUTH frame with the right digest.
            OSError: the connection failed (ConnectionClosed: the client closed it).
        """
        try:
            if self.payload is None:
                self.head += self.receive(p.HEADER.size - len(self.head))
                if len(self.head) < p.HEADER.size:
                    return False
                try:
                    self.type, self.length = p.parse_head(self.head, AUTH_FRAME_BYTES)
                except p.FrameError as e:
                    raise self.no_auth(e) from None
                self.payload = bytearray()
            self.payload += self.receive(self.length - len(self.payload))
        except BlockingIOError:
            return False
        if len(self.payload) < self.length:
            return False
        try:
            header, _ = p.split_payload(memoryview(self.payload))
        except p.MessageError as e:
            raise self.no_auth(e) from None
        if self.type != MsgType.AUTH:
            raise Refused(
                f"expected an AUTH frame, got message type {self.type}",
                f"refused: message type {self.type} before AUTH",
            )
        self.check(header.get("digest"))
        return True

    def receive(self, size: int) -> bytes:
        if size == 0:
            return b""
        data = self.conn.recv(size)
        if not data:
            got = len(self.head) + len(self.payload or b"")
            raise p.ConnectionClosed(
                f"the client closed the connection after {got} bytes of its AUTH frame"
            )
        return data

    def check(self, digest: object) -> None:
        if self.key is None:
            return
        if isinstance(digest, str) and hmac.compare_digest(
            # As bytes: compare_digest refuses a str that is not ASCII.
            digest.encode(errors="replace"),
            p.expected_digest(self.key, self.nonce).encode(),
        ):
            return
        why = "no key" if digest is None else "a wrong key"
        raise Refused(
            f"refused: the server requires a key and the client sent {why}",
            f"refused: the client sent {why}",
        )

    def expired(self) -> Refused:
        """The refusal of a handshake past its deadline."""
        if self.head:
            why = "the AUTH frame was still incomplete at its deadline"
        else:
            why = "timed out"
        return self.no_auth(why)

    @staticmethod
    def no_auth(why: object) -> Refused:
        return Refused(
            f"expected an AUTH frame: {why}", f"refused: no valid AUTH frame ({why})"
        )

    def refuse(self, message: str) -> None:
        """Send an ERROR reply if the socket takes it now, then close."""
        frame = p.frame_head(MsgType.ERROR, p.error_header(RPCError(message)), 0)
        try:
            self.conn.send(bytes(self.out) + frame)
        except OSError:
            pass
        self.conn.close()
