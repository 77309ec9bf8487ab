"""ember's dialects, one file each: `graph` (operators on tensors), `te` (tensor
expressions), `loop` (loop nests), `dot` (byte dot products), and `llvm` (xDSL's
llvm dialect with the instructions ember adds)."""

from collections.abc import Callable

from xdsl.context import Context
from xdsl.ir import Dialect


def get_ember_dialects() -> dict[str, Callable[[], Dialect]]:
    """ember's dialects by name, imported only when first used."""

    def graph() -> Dialect:
        from ember.dialects.graph import Graph

        return Graph

    def te() -> Dialect:
        from ember.dialects.te import TE

        return TE

    def loop() -> Dialect:
        from ember.dialects.loop import Loop

        return Loop

    def dot() -> Dialect:
        from ember.dialects.dot import Dot

        return Dot

    def llvm() -> Dialect:
        from ember.dialects.llvm import LLVM

        return LLVM

    return {"graph": graph, "te": te, "loop": loop, "dot": dot, "llvm": llvm}


def register_all_dialects(ctx: Context) -> Context:
    """Register xDSL's dialects and ember's (ember's `llvm` replaces xDSL's)."""
    from xdsl.dialects import get_all_dialects

    ours = get_ember_dialects()
    for name, factory in get_all_dialects().items():
        if name not in ours:
            ctx.register_dialect(name, factory)
    for name, factory in ours.items():
        ctx.register_dialect(name, factory)
    return ctx
