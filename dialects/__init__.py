"""ember's dialects, one file each: `te` (tensor expressions), `loop` (loop nests),
and `llvm` (xDSL's llvm dialect with the instructions ember adds)."""

from collections.abc import Callable

from xdsl.ir import Dialect


def get_ember_dialects() -> dict[str, Callable[[], Dialect]]:
    """ember's dialects by name, imported only when first used."""

    def te() -> Dialect:
        from ember.dialects.te import TE

        return TE

    def loop() -> Dialect:
        from ember.dialects.loop import Loop

        return Loop

    def llvm() -> Dialect:
        from ember.dialects.llvm import LLVM

        return LLVM

    return {"te": te, "loop": loop, "llvm": llvm}
