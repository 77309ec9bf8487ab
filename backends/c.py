"""The `c` kind: loop IR as portable C99, a library of packed functions built
by the system C compiler (`backends/source/c.py`); with `-mcpu=cortex-m*` or
`-micro=true` microcontroller code (no heap, no threads)."""

from typing import ClassVar

from ember.backends import Backend


class CBackend(Backend):
    kind = "c"
    summary = "C99 source, a library built by the system C compiler"
    options: ClassVar[dict[str, str]] = {"mcpu": "", "micro": ""}
    source_suffix = "c"

    def face(self):
        from ember.backends.source.faces import CFace

        return CFace()

    def build(self, module, target, entry):
        from ember.backends.source.c import build_c

        return build_c(module, target, entry)


BACKEND = CBackend()
