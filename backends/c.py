"""The `c` kind: loop IR as portable C99, a library of packed functions built
by the system C compiler (`backends/source/c.py`); with `-mcpu=cortex-m*` or
`-micro=true` microcontroller code (no heap, no threads). Whole models are one
C file too (`backends/source/c_model.py`): each kernel printed apart, linked
with a `default_run` over one static workspace."""

from typing import ClassVar

from ember.backends import Backend


class CBackend(Backend):
    kind = "c"
    summary = "C99 source, a library built by the system C compiler"
    options: ClassVar[dict[str, str]] = {"mcpu": "", "micro": ""}
    source_suffix = "c"
    models = True
    memory = "workspace"

    def face(self):
        from ember.backends.source.faces import CFace

        return CFace()

    def build(self, module, target, entry):
        from ember.backends.source.c import build_c

        return build_c(module, target, entry)

    def compile_kernel(self, module, symbol, target) -> bytes:
        """The kernel printed as C: a piece of the model's C file."""
        import json

        from ember.backends.source.c_model import kernel_piece

        return json.dumps(kernel_piece(module, symbol, target)).encode()

    def kernel_problem(self, code, symbol):
        from ember.backends.source.c_model import piece_problem

        return piece_problem(code, symbol)

    def link_model(self, module, target, info, params, kernels, entry_loop):
        from ember.backends.source.c_model import link

        return link(module, target, info, params, kernels, entry_loop)


BACKEND = CBackend()
