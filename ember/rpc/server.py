"""``python -m ember.rpc.server``: the RPC server (``ember.runtime.rpc.server``)."""

import sys

from ember.runtime.rpc.server import Server, main

__all__ = ["Server", "main"]

if __name__ == "__main__":
    sys.exit(main())
