"""Remote procedure calls: compile here, run and measure on another machine.

A server (``ember-rpc-server``, ``ember.rpc.server``) runs on the machine with
the hardware; a client connects, uploads a library, loads it there, makes
arrays there and calls and times its functions there::

    remote = ember.rpc.connect("board.local", 9090, key="...")
    remote.upload("kernel.so")
    f = remote.load_module("kernel.so")["kernel"]
    dev = remote.cpu(0)
    a = ember.runtime.array(x, device=dev)
    f(a, b, c)
    c.numpy()
    remote.load_module("kernel.so").time_evaluator("kernel", dev)(a, b, c).mean

The wire format is in ``protocol``; the client's session in ``client`` and the
handles it gives out in ``remote``; the server's side of a session in
``session``, the handshake the listener runs before it forks a session in
``handshake``, the server's directory of workspaces in ``roots``, the
listener and command line in ``server``. Like the rest of the
runtime, this package imports nothing from the compiler.
"""

from .client import RPCSession, connect
from .protocol import FrameError, MessageError, RemoteError, RPCError
from .remote import RemoteDevice, RemoteFunction, RemoteModule, RemoteNDArray

__all__ = [
    "FrameError",
    "MessageError",
    "RPCError",
    "RPCSession",
    "RemoteDevice",
    "RemoteError",
    "RemoteFunction",
    "RemoteModule",
    "RemoteNDArray",
    "connect",
]
