"""A model's symbolic dims (issue 25): the shapes of its metadata's ``"model"``
object parsed once, and bound to its inputs' actual shapes at each call.

A dim is a non-negative int or a ``shape_expr`` expression text (``"batch"``,
``"seq + 1"``, ``"batch * 12"``). An input's dims that are one symbol alone bind
that symbol; the other dims, the outputs' shapes and ``"workspace_bytes"`` are
evaluated with the symbols bound; ``"bounds"`` caps some symbols::

    dims = ModelDims({"inputs": [{"name": "ids", "shape": ["batch", "seq"]}],
                      "outputs": [{"name": "y", "shape": ["batch", "seq + 1"]}],
                      "workspace_bytes": "64 * seq", "bounds": {"seq": 512}})
    env = dims.bind([(2, 16)])          # {"batch": 2, "seq": 16}
    dims.output_shapes(env)             # [(2, 17)]
    dims.workspace_bytes(env)           # 1024
    dims.derive([(2, 16)])              # ([(2, 17)], 1024), all three at once

``derive`` is what a call runs: a Python function generated from the parsed
dims on its first use, so that a call costs a few plain comparisons and
arithmetic, not a walk over expression trees.
"""

from collections.abc import Callable, Mapping, Sequence

from .errors import EmberValueError
from .shape_expr import SymExpr, evaluate, parse


def _parse_dim(dim: object, where: str) -> int | SymExpr:
    if type(dim) is int and dim >= 0:
        return dim
    if not isinstance(dim, str):
        raise EmberValueError(
            f"{where}: expected a non-negative int or an expression text, got {dim!r}"
        )
    try:
        value = parse(dim)
    except EmberValueError as e:
        raise EmberValueError(f"{where}: {e}") from None
    if isinstance(value, int) and value < 0:
        raise EmberValueError(f"{where}: {dim!r} is negative")
    return value


def _known(value: int | SymExpr, env: Mapping[str, int]) -> str:
    names = sorted(value.symbols()) if isinstance(value, SymExpr) else []
    return ", ".join(f"{name} = {env[name]}" for name in names if name in env)


class ModelDims:
    """The dims of a model's inputs, outputs and workspace, parsed and checked.

    Args:
        model: the metadata's ``"model"`` object (names and shapes as
            ``check_model`` wants them; ``"bounds"`` optional).

    Attributes:
        symbolic: whether any dim or the workspace size is an expression.
        symbols: the names of the symbols the inputs bind.
        bounds: symbol -> its inclusive upper bound, for those that have one.

    Raises:
        EmberValueError: a dim that is neither an int nor an expression text,
            a symbol no input binds (one of its dims is that symbol alone),
            or a bound that is not a positive int of such a symbol.
    """

    def __init__(self, model: Mapping):
        self.input_names = [t["name"] for t in model["inputs"]]
        self.output_names = [t["name"] for t in model["outputs"]]
        self.inputs = self._parse(model["inputs"], "inputs")
        self.outputs = self._parse(model["outputs"], "outputs")
        self.workspace = _parse_dim(
            model.get("workspace_bytes", 0), 'model: "workspace_bytes"'
        )
        # per input, (dim index, symbol) of the dims that bind a symbol, and
        # (dim index, dim) of the rest, checked once the symbols are bound
        self._binds = [
            [(j, str(d)) for j, d in enumerate(dims) if _is_symbol(d)]
            for dims in self.inputs
        ]
        self._checks = [
            [(j, d) for j, d in enumerate(dims) if not _is_symbol(d)]
            for dims in self.inputs
        ]
        self.symbols = {name for binds in self._binds for _, name in binds}
        self._check_symbols()
        self.bounds = self._bounds(model.get("bounds", {}))
        self.symbolic = isinstance(self.workspace, SymExpr) or any(
            isinstance(dim, SymExpr)
            for dims in self.inputs + self.outputs
            for dim in dims
        )
        self._fast: Callable | None = None  # derive's function, made on first use

    def normalized(self, model: Mapping) -> dict:
        """``model`` with each dim and the workspace size that are constants
        as ints (``"768"`` is 768), the others as the metadata writes them."""

        def tensors(key: str, parsed: list[list[int | SymExpr]]) -> list[dict]:
            return [
                {
                    **t,
                    "shape": [
                        d if isinstance(d, int) else text
                        for d, text in zip(dims, t["shape"], strict=True)
                    ],
                }
                for t, dims in zip(model[key], parsed, strict=True)
            ]

        workspace = self.workspace
        return {
            **model,
            "inputs": tensors("inputs", self.inputs),
            "outputs": tensors("outputs", self.outputs),
            "workspace_bytes": workspace
            if isinstance(workspace, int)
            else model["workspace_bytes"],
        }

    @staticmethod
    def _parse(tensors: Sequence[Mapping], key: str) -> list[list[int | SymExpr]]:
        return [
            [
                _parse_dim(dim, f"model: {key}[{i}] ({t['name']!r}): dim {j}")
                for j, dim in enumerate(t["shape"])
            ]
            for i, t in enumerate(tensors)
        ]

    def _check_symbols(self) -> None:
        uses = [
            (f"{key}[{i}] ({names[i]!r}): dim {j}", dim)
            for key, names, tensors in (
                ("inputs", self.input_names, self.inputs),
                ("outputs", self.output_names, self.outputs),
            )
            for i, dims in enumerate(tensors)
            for j, dim in enumerate(dims)
        ]
        uses.append(('"workspace_bytes"', self.workspace))
        for where, dim in uses:
            if not isinstance(dim, SymExpr):
                continue
            for name in sorted(dim.symbols() - self.symbols):
                raise EmberValueError(
                    f"model: {where} is {str(dim)!r}, which uses symbol {name!r}; "
                    f"no input binds it (an input's dim that is {name!r} alone)"
                )

    def _bounds(self, bounds: object) -> dict[str, int]:
        if not isinstance(bounds, dict):
            raise EmberValueError(
                f'model: "bounds" must be an object, got {type(bounds).__name__}'
            )
        for name, bound in bounds.items():
            if name not in self.symbols:
                known = ", ".join(map(repr, sorted(self.symbols))) or "none"
                raise EmberValueError(
                    f"model: bounds: {name!r} is not a symbol of the model's "
                    f"inputs; its symbols are {known}"
                )
            if type(bound) is not int or bound <= 0:
                raise EmberValueError(
                    f"model: bounds: {name!r} must be a positive int, got {bound!r}"
                )
        return dict(bounds)

    def bind(
        self, shapes: Sequence[Sequence[int] | None], prefix: str = ""
    ) -> dict[str, int]:
        """The symbols' values from the inputs' actual shapes (one per input,
        each of its input's rank; None for an input not known yet, whose
        dims are skipped), and every dim of the given inputs checked whose
        symbols they bind.

        Args:
            shapes: the inputs' shapes, in the model's order.
            prefix: what the messages start with (``"run: "``).

        Returns:
            symbol name -> value, for the symbols the given inputs bind.

        Raises:
            EmberValueError: a symbol given two values, a value above its
                bound, or a dim other than its expression's value, naming
                the input, the dim and the values.

        Example:
            >>> dims.bind([(2, 16), (2, 16)])  # doctest: +SKIP
            {'batch': 2, 'seq': 16}
        """
        env: dict[str, int] = {}
        origin: dict[str, str] = {}
        for name, binds, shape in zip(
            self.input_names, self._binds, shapes, strict=True
        ):
            if shape is None:
                continue
            for j, symbol in binds:
                size, known = shape[j], env.get(symbol)
                if known is None:
                    bound = self.bounds.get(symbol)
                    if bound is not None and size > bound:
                        raise EmberValueError(
                            f"{prefix}input {name!r}: {symbol} = {size} is above "
                            f"its bound {bound}"
                        )
                    env[symbol], origin[symbol] = size, name
                elif size != known:
                    raise EmberValueError(
                        f"{prefix}input {name!r}: dim {j} is {symbol!r} = {size}, "
                        f"but input {origin[symbol]!r} gave {symbol} = {known}"
                    )
        for name, checks, shape in zip(
            self.input_names, self._checks, shapes, strict=True
        ):
            if shape is None:
                continue
            for j, dim in checks:
                if isinstance(dim, int):
                    if shape[j] != dim:
                        raise EmberValueError(
                            f"{prefix}input {name!r}: dim {j} must be {dim}, "
                            f"got {shape[j]}"
                        )
                elif dim.symbols() <= env.keys():
                    want = evaluate(dim, env)
                    if shape[j] != want:
                        raise EmberValueError(
                            f"{prefix}input {name!r}: dim {j} is {str(dim)!r} = "
                            f"{want} ({_known(dim, env)}), got {shape[j]}"
                        )
        return env

    def derive(
        self, shapes: Sequence[Sequence[int]], prefix: str = ""
    ) -> tuple[list[tuple[int, ...]], int]:
        """``bind``, ``output_shapes`` and ``workspace_bytes`` at once, for
        every input's shape, through a function generated once from the dims
        (see ``_derive_source``); a call it refuses takes those three, whose
        messages say why.

        Args:
            shapes: the inputs' shapes, in the model's order, each of its
                input's rank.
            prefix: what the messages start with (``"run: "``).

        Returns:
            the outputs' shapes and the workspace size in bytes.

        Raises:
            EmberValueError: as ``bind``, ``output_shapes`` and
                ``workspace_bytes`` do.

        Example:
            >>> dims.derive([(2, 16), (16,)])  # doctest: +SKIP
            ([(2, 17)], 128)
        """
        fast = self._fast
        if fast is None:
            fast = self._fast = _compile(self._derive_source())
        try:
            derived = fast(*shapes)
        except ZeroDivisionError:
            derived = None
        if derived is None:
            env = self.bind(shapes, prefix)
            return self.output_shapes(env), self.workspace_bytes(env)
        return derived

    def _derive_source(self) -> str:
        """``derive``'s function as Python source: the input shapes are its
        parameters ``s0, s1, ...``, the symbols the locals ``v0, v1, ...``; it
        returns None (or divides by zero) where ``bind``, ``output_shapes`` or
        ``workspace_bytes`` would raise. The text is generated from the parsed
        dims (`_source`), never the metadata's."""
        names: dict[str, str] = {}
        lines: list[str] = []
        refusals: list[str] = []
        for i, binds in enumerate(self._binds):
            for j, symbol in binds:
                size = f"s{i}[{j}]"
                if symbol in names:
                    refusals.append(f"{size} != {names[symbol]}")
                    continue
                names[symbol] = f"v{len(names)}"
                lines.append(f"{names[symbol]} = {size}")
                if symbol in self.bounds:
                    refusals.append(f"{names[symbol]} > {self.bounds[symbol]}")
        for i, checks in enumerate(self._checks):
            refusals += [f"s{i}[{j}] != {_source(d, names)}" for j, d in checks]

        def value(dim: int | SymExpr) -> str:
            text = _source(dim, names)
            if isinstance(dim, int) or dim.is_symbol():  # never negative
                return text
            local = f"t{len(lines)}"
            lines.append(f"{local} = {text}")
            refusals.append(f"{local} < 0")
            return local

        # "(a, b,)": a tuple at every rank, () included
        outputs = [
            "(" + "".join(f"{value(dim)}, " for dim in dims).rstrip(" ") + ")"
            for dims in self.outputs
        ]
        workspace = value(self.workspace)
        params = ", ".join(f"s{i}" for i in range(len(self.inputs)))
        lines += [f"if {' or '.join(refusals)}:", "    return None"] if refusals else []
        lines.append(f"return [{', '.join(outputs)}], {workspace}")
        return f"def derive({params}):\n" + "".join(f"    {x}\n" for x in lines)

    def output_shapes(self, env: Mapping[str, int]) -> list[tuple[int, ...]]:
        """The outputs' shapes with the symbols ``env`` binds.

        Raises:
            EmberValueError: a dim whose value is negative (or divides by 0).
        """
        return [
            tuple(
                self._value(dim, env, f"output {name!r}: dim {j}")
                for j, dim in enumerate(dims)
            )
            for name, dims in zip(self.output_names, self.outputs, strict=True)
        ]

    def workspace_bytes(self, env: Mapping[str, int]) -> int:
        """The workspace's size in bytes with the symbols ``env`` binds."""
        return self._value(self.workspace, env, "the workspace size")

    @staticmethod
    def _value(dim: int | SymExpr, env: Mapping[str, int], where: str) -> int:
        if isinstance(dim, int):
            return dim
        try:
            value = evaluate(dim, env)
        except EmberValueError as e:
            raise EmberValueError(f"{where}: {e}") from None
        if value < 0:
            raise EmberValueError(
                f"{where} is {str(dim)!r} = {value} ({_known(dim, env)}), "
                "which is negative"
            )
        return value


def _source(value: int | SymExpr, names: Mapping[str, str]) -> str:
    """Python source computing ``value`` (as ``evaluate`` does) from the
    locals ``names`` gives its symbols: ints, those names, ``+ * // %``,
    ``min`` and ``max``; nothing of the metadata's text."""
    if isinstance(value, int):
        return f"({value})" if value < 0 else str(value)
    terms = [
        " * ".join(
            ([] if coeff == 1 else [_source(coeff, names)])
            + [_atom_source(atom, names) for atom in monomial]
        )
        for monomial, coeff in value.terms
    ]
    if value.const:
        terms.append(_source(value.const, names))
    return terms[0] if len(terms) == 1 else f"({' + '.join(terms)})"


def _atom_source(atom, names: Mapping[str, str]) -> str:
    if atom.op is None:
        return names[atom.name]
    a, b = (_source(arg, names) for arg in atom.args)
    if atom.op in ("min", "max"):
        return f"{atom.op}({a}, {b})"
    return f"(({a}) {'//' if atom.op == 'floordiv' else '%'} ({b}))"


def _compile(source: str) -> Callable:
    # no builtins but min and max: the source reads nothing else
    namespace: dict = {"__builtins__": {}, "min": min, "max": max}
    exec(compile(source, "<ember model dims>", "exec"), namespace)
    derive = namespace["derive"]
    derive.source = source
    return derive


def _is_symbol(dim: int | SymExpr) -> bool:
    return isinstance(dim, SymExpr) and dim.is_symbol()


__all__ = ["ModelDims"]
