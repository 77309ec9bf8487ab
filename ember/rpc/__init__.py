"""``ember.rpc``: the RPC client and server, which live in the runtime
(``ember.runtime.rpc``) because a device runs the server without the compiler."""

from ember.runtime.rpc import *  # noqa: F403
from ember.runtime.rpc import __all__ as __all__
