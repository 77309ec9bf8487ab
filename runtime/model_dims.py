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
"""

from collections.abc import Mapping, Sequence

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


def _is_symbol(dim: int | SymExpr) -> bool:
    return isinstance(dim, SymExpr) and dim.is_symbol()


__all__ = ["ModelDims"]
