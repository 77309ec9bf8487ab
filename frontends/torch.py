"""PyTorch models to graph IR (TVM's `relax.frontend.torch.from_exported_program`),
and `torch.compile(model, backend="ember")`.

    ep = torch.export.export(model.eval(), (x,))
    mod, params = from_exported_program(ep)
    lib = ember.compile_model(mod, params=params)

    m = ember.frontends.torch.compile(model, (x,))     # the same, callable on tensors
    y = m(x)
    m = ember.frontends.torch.compile(model, (x,), dynamic_shapes={"x": {0: Dim("b")}})

    y = torch.compile(model, backend="ember")(x)        # through TorchDynamo

torch is an optional dependency (`pip install ember[torch]`); nothing else in
ember imports this module. The import runs in three steps:

1. decompose: `ep.run_decompositions()` brings the graph to the core aten
   opset (batch norm in eval mode becomes `_native_batch_norm_legit_no_training`,
   Linear `permute` + `addmm`, ...), but for the ops that are one graph op each
   (`torch_ops.KEPT`: softplus, silu, hardswish, matmul, ...);
2. check the whole graph: every aten op ember cannot convert and every
   argument value it cannot take (a 1-D convolution, a rounding `div`, a
   float64 result, ...) are collected into one `UnsupportedOperatorError`,
   with how often each occurs, before any IR is built; tensors are float32,
   int64, int32 or bool (`torch_ops.DTYPES`: token ids, positions, masks);
3. convert node by node (`frontends/torch_ops.py`, `torch_data.py`): a node
   that reads only buffers and constants (`arange`, a causal mask's `~mask`,
   `scalar_tensor`) is computed by torch at import instead; parameters,
   buffers and constants become `graph.param`s named by their
   state-dict names, user inputs the arguments of `@main` (named as in
   `forward`'s signature), user outputs its results ("output", or "output0",
   "output1", ...).

A program exported with `Dim`s (`dynamic_shapes`) imports symbolically: each
of torch's size symbols is named after the first input and axis it is the
size of (`x.dim0`), and `ember.compile_model` makes one library that runs
every consistent size.

The TorchDynamo backend exports the graph dynamo hands it, with the module's
parameters and buffers frozen as params; a weight changed in place later (even
through `p.data`) triggers a recompilation. A graph dynamo traced with
symbolic sizes (`dynamic=True`, or its automatic dynamic shapes on a second
shape) is compiled once, symbolically, and runs every later shape; one that
cannot be (see `_DynamoRunner`) is compiled per shape. The graph dynamo
specializes to a batch of 1 is compiled with that batch symbolic where its
ops allow, and graphs that import alike share one library. A model that
reads the batch as an int compiles its batch-1 graph once more, unless
traced under torch's `torch.fx.experimental._config.backed_size_oblivious`. It runs the compiled model on the
tensors without copying them (DLPack both ways). Importing this module registers
the backend under "ember"; an installed ember also declares it as a
`torch_dynamo_backends` entry point, so `backend="ember"` works without the
import.
"""

from __future__ import annotations

import collections
import contextlib
import copy
import hashlib
import math
import weakref
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import torch
import torch.fx.experimental._config as _fx_config
from torch._guards import tracing
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind, OutputKind
from torch.fx.node import map_arg
from torch.utils._pytree import tree_unflatten
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.ir import Block, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from ember.dialects import graph as G
from ember.dialects.graph_base import NUMPY_TYPES
from ember.dialects.graph_shapes import tensor_of
from ember.frontends import torch_data, torch_ops, unsupported_message
from ember.frontends.torch_ops import DTYPES, ConversionError, literal
from ember.runtime.errors import EmberError

del torch_data  # imported for its converters (torch_ops registers)

__all__ = [
    "CompiledModel",
    "TorchImportError",
    "UnsupportedOperatorError",
    "compile",
    "ember_backend",
    "from_exported_program",
]


class TorchImportError(EmberError):
    """The program cannot be imported: an input of another dtype, a training
    graph, or a node that does not convert."""


class UnsupportedOperatorError(TorchImportError):
    """The program uses aten ops (or argument values) ember does not convert.

    `unsupported` maps each op, with the argument values at fault where the op
    itself is supported ("aten.convolution.default (transposed)"), to the names
    of its nodes.
    """

    def __init__(self, label: str, unsupported: Mapping[str, Sequence[str]]):
        self.unsupported = {key: list(nodes) for key, nodes in unsupported.items()}
        super().__init__(unsupported_message(label, "aten", self.unsupported))


def _check_graph(graph: Any, label: str, folded: Collection[Any]) -> None:
    """Raise one UnsupportedOperatorError listing every node that cannot convert
    (`folded` nodes are computed at import and need no converter)."""
    unsupported: dict[str, list[str]] = collections.defaultdict(list)
    for node in graph.nodes:
        if node.op != "call_function" or node in folded:
            continue
        name = torch_ops.op_name(node.target)
        key = torch_ops.display_name(node.target)
        if name not in torch_ops.CONVERTERS:
            unsupported[key].append(node.name)
            continue
        check = torch_ops.CHECKS.get(name)
        problems = check(node.args, node.kwargs) if check else []
        dtype = _dtype_name(node.meta.get("val"))
        if name != "getitem" and dtype is not None and dtype not in DTYPES:
            problems.append(f"a {dtype} result")
        if problems:
            unsupported[f"{key} ({', '.join(problems)})"].append(node.name)
    if unsupported:
        raise UnsupportedOperatorError(label, unsupported)


def _dtype_name(val: Any) -> str | None:
    """The numpy name of a recorded tensor value's dtype (None: not a tensor)."""
    dtype = getattr(val, "dtype", None)
    return None if dtype is None else str(dtype).removeprefix("torch.")


def _folded(graph: Any, constant: Collection[Any]) -> set[Any]:
    """The nodes computed at import: those that read nothing but `constant`
    placeholders (buffers and constants: not parameters, not user inputs) and
    other such nodes, e.g. `arange`, a causal mask's `~mask`, `scalar_tensor`."""
    folded: set[Any] = set()
    for node in graph.nodes:
        if node.op != "call_function":
            continue
        reads = node.all_input_nodes
        if all(n in constant or n in folded for n in reads) and _pure(node):
            folded.add(node)
    return folded


def _pure(node: Any) -> bool:
    """Whether running `node`'s op at import gives its value: a deterministic
    op with tensor results."""
    schema = getattr(node.target, "_schema", None)
    if schema is None or schema.is_mutable:
        return False
    if torch.Tag.nondeterministic_seeded in getattr(node.target, "tags", ()):
        return False  # rand, bernoulli, dropout in training, ...
    val = node.meta.get("val")
    values = val if isinstance(val, list | tuple) else [val]
    return all(isinstance(v, torch.Tensor) for v in values)


def _input_shape(
    node: Any, what: str, label: str, symbols: dict[str, str]
) -> tuple[int, ...]:
    """An input's dims: ints, and for a dim `torch.export` made symbolic
    (`Dim`, `dynamic_shapes`) the expression over ember symbols, each of
    torch's symbols named after the first input and axis it is the size of
    (`x.dim0`), recorded in `symbols`."""
    val = node.meta.get("val")
    if not isinstance(val, torch.Tensor):
        raise TorchImportError(f"{label}: expected a tensor for {what}, got {val!r}")
    if _dtype_name(val) not in DTYPES:
        raise TorchImportError(
            f"{label}: expected a {what} of {', '.join(sorted(DTYPES))}, got "
            f"{_dtype_name(val)}"
        )
    for axis, d in enumerate(val.shape):
        expr = getattr(getattr(d, "node", None), "expr", None)
        if expr is not None and expr.is_Symbol and str(expr) not in symbols:
            symbols[str(expr)] = f"{node.name}.dim{axis}"
    return tuple(torch_ops.size_of(d, symbols, f"{label}: {what}") for d in val.shape)


def _is_size(node: Any) -> bool:
    """Whether `node` computes a size (a `torch.SymInt`: `sym_size`, and
    arithmetic on sizes), which the import computes as an expression."""
    return isinstance(node.meta.get("val"), torch.SymInt)


def _size(node: Any, symbols: dict[str, str], label: str) -> Any:
    return torch_ops.size_of(node.meta["val"], symbols, f"{label}: node '{node.name}'")


class _Importer:
    def __init__(self, label: str):
        self.label = label
        self.block = Block()
        self.params: dict[str, np.ndarray] = {}
        self.env: dict[Any, Any] = {}
        self.names: dict[int, str] = {}  # id of an import-time array -> its name
        # by id(); the arrays are kept so that no id is reused
        self.materialized: dict[int, tuple[np.ndarray, SSAValue]] = {}
        self.symbols: dict[str, str] = {}  # torch's symbol -> ember's name

    def materialize(self, array: np.ndarray, name: str | None) -> SSAValue:
        """An import-time array as an operand: a graph.param under its
        state-dict name, or a literal when it is a scalar or unnamed and small."""
        key = id(array)
        if key in self.materialized:
            return self.materialized[key][1]
        if array.dtype.name not in DTYPES:
            raise ConversionError(
                f"expected a tensor of {', '.join(sorted(DTYPES))}, got {array.dtype}"
            )
        name = name or self.names.get(key)
        if array.size <= 1 or name is None and array.size <= 16:
            op = G.ConstantOp(literal(array))
        else:
            name = name or f"constant{len(self.params)}"
            self.params[name] = array
            op = G.ParamOp(name, TensorType(NUMPY_TYPES[array.dtype.name], array.shape))
        self.block.add_op(op)
        self.materialized[key] = (array, op.results[0])
        return op.results[0]

    def bind(self, node: Any, array: np.ndarray, name: str) -> None:
        self.env[node] = array
        self.names[id(array)] = name

    def fold(self, node: Any) -> None:
        """Run `node`'s op on its import-time values (torch, on the CPU)."""
        args, kwargs = map_arg(
            (node.args, node.kwargs), lambda n: _tensor(self.env.get(n))
        )
        result = node.target(*args, **kwargs)
        if isinstance(result, list | tuple):
            self.env[node] = tuple(_numpy(t) for t in result)
        else:
            self.env[node] = _numpy(result)

    def convert(self, node: Any) -> None:
        args, kwargs = map_arg((node.args, node.kwargs), self.env.get)
        context = torch_ops.OpContext(node, self.block, self.materialize, self.symbols)
        try:
            convert = torch_ops.CONVERTERS[torch_ops.op_name(node.target)]
            self.env[node] = convert(context, *args, **kwargs)
        except (ConversionError, VerifyException, TypeError) as e:
            raise TorchImportError(
                f"{self.label}: {torch_ops.display_name(node.target)} node "
                f"'{node.name}': {e}"
            ) from None

    def output(self, node: Any, what: str) -> SSAValue:
        value = self.env.get(node) if isinstance(node, torch.fx.Node) else node
        if isinstance(value, SSAValue):
            return value
        if isinstance(value, np.ndarray) and value.dtype.name in DTYPES:
            return self.materialize(value, None)
        raise TorchImportError(
            f"{self.label}: expected a tensor of {', '.join(sorted(DTYPES))} for "
            f"{what}, got {value!r}"
        )


def _numpy(t: torch.Tensor) -> np.ndarray:
    return t.detach().cpu().contiguous().numpy()


def _tensor(value: Any) -> Any:
    """An import-time value as torch reads it (arrays become tensors)."""
    return torch.from_numpy(value) if isinstance(value, np.ndarray) else value


def _import(
    ep: ExportedProgram, frozen: Mapping[int, tuple[str, torch.Tensor]], label: str
) -> tuple[ModuleOp, dict[str, np.ndarray]]:
    """The graph IR of a decomposed program; the user inputs whose positions
    `frozen` holds become params (name, value) instead of arguments."""
    graph = ep.graph_module.graph
    state = {**ep.state_dict, **ep.constants}
    specs = {spec.arg.name: spec for spec in ep.graph_signature.input_specs}
    inputs: list[tuple[str, Any]] = []
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    users = [n for n in placeholders if specs[n.name].kind == InputKind.USER_INPUT]
    constant = [n for n in placeholders if specs[n.name].kind in _CONSTANT_KINDS]
    folded = _folded(graph, constant)
    sizes = {n for n in graph.nodes if n.op == "call_function" and _is_size(n)}
    _check_graph(graph, label, folded | sizes)
    importer = _Importer(label)
    for node in placeholders:
        spec = specs[node.name]
        if node in users and users.index(node) in frozen:
            name, value = frozen[users.index(node)]
        elif node in users:
            inputs.append((node.name, node))
            continue
        elif spec.target in state:
            name, value = spec.target, state[spec.target]
        else:
            raise TorchImportError(
                f"{label}: expected a value for input '{node.name}' "
                f"({spec.kind.name}), got none"
            )
        if isinstance(value, torch.Tensor):
            importer.bind(node, _numpy(value), name)
        else:
            importer.env[node] = value
    args = []
    for i, (name, node) in enumerate(inputs):
        shape = _input_shape(node, f"input '{name}'", label, importer.symbols)
        element = NUMPY_TYPES[_dtype_name(node.meta["val"]) or "float32"]
        args.append(importer.block.insert_arg(tensor_of(element, shape), i))
    for (_, node), arg in zip(inputs, args, strict=True):
        importer.env[node] = arg
    for node in graph.nodes:
        if node in sizes:
            importer.env[node] = _size(node, importer.symbols, label)
        elif node in folded:
            importer.fold(node)
        elif node.op == "call_function":
            importer.convert(node)
    (output,) = [n for n in graph.nodes if n.op == "output"]
    values = list(output.args[0])
    specs_out = ep.graph_signature.output_specs
    mutated = [s.target for s in specs_out if s.kind != OutputKind.USER_OUTPUT]
    if mutated:
        raise TorchImportError(
            f"{label}: expected an inference graph, got one that updates "
            f"{', '.join(map(str, mutated))} (call model.eval() before exporting)"
        )
    out_names = (
        ["output"] if len(values) == 1 else [f"output{i}" for i in range(len(values))]
    )
    results = [importer.output(v, f"output {i}") for i, v in enumerate(values)]
    importer.block.add_op(func.ReturnOp(*results))

    def names(values: Sequence[str]) -> ArrayAttr[DictionaryAttr]:
        return ArrayAttr(
            [DictionaryAttr({"ember.name": StringAttr(n)}) for n in values]
        )

    main = func.FuncOp(
        "main",
        ([a.type for a in args], [r.type for r in results]),
        Region(importer.block),
        arg_attrs=names([name for name, _ in inputs]),
        res_attrs=names(out_names),
    )
    module = ModuleOp([main])
    try:
        module.verify()
    except VerifyException as e:
        raise TorchImportError(
            f"{label}: the imported graph does not verify: {e}"
        ) from e
    return module, importer.params


_CONSTANT_KINDS = (InputKind.BUFFER, InputKind.CONSTANT_TENSOR)
"""Placeholders whose values ops may be computed on at import; parameters stay
graph params (a dense layer finds its weight among them)."""


def _decompose(ep: ExportedProgram) -> ExportedProgram:
    """The program in core aten but for `torch_ops.KEPT`, attention as the
    math `_attention` writes."""
    table = torch.export.default_decompositions()
    for op in [op for op in table if torch_ops.op_name(op) in torch_ops.KEPT]:
        del table[op]
    table[torch.ops.aten.scaled_dot_product_attention.default] = _attention
    return ep.run_decompositions(table)


def _attention(
    q,
    k,
    v,
    attn_mask=None,
    dropout_p=0.0,
    is_causal=False,
    scale=None,
    enable_gqa=False,
):
    """`scaled_dot_product_attention` as its definition (inference: no
    dropout): softmax(q k^T * scale + mask) v, each result compact as
    eager's. torch's own decomposition goes through the CPU flash kernel,
    whose traced result is laid out heads-inner, so that Hugging Face's
    `transpose(1, 2).reshape(...).view(...)` after it (GPT-2's attention at
    batch > 1) fails to trace."""
    if enable_gqa and k.shape[-3] != q.shape[-3]:
        groups = q.shape[-3] // k.shape[-3]
        k, v = (t.repeat_interleave(groups, dim=-3) for t in (k, v))
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = torch.matmul(q, k.transpose(-2, -1)) * scale
    if is_causal:
        keep = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
        scores = scores.masked_fill(~keep, float("-inf"))
    if attn_mask is not None and attn_mask.dtype == torch.bool:
        scores = scores.masked_fill(~attn_mask, float("-inf"))
    elif attn_mask is not None:
        scores = scores + attn_mask
    return torch.matmul(torch.softmax(scores, dim=-1), v)


def from_exported_program(
    ep: ExportedProgram,
) -> tuple[ModuleOp, dict[str, np.ndarray]]:
    """Import a `torch.export` program as graph IR and its params.

    Args:
        ep: `torch.export.export(model.eval(), args)`'s program, with inputs
            of `DTYPES`, exported with `Dim`s (`dynamic_shapes`) or not; it is
            decomposed to the core aten opset here (a program already
            decomposed stays as it is).

    Returns:
        (module, params): a builtin.module with `func.func @main` (arguments
        named after `forward`'s tensors; a dim given a `Dim` is a symbol named
        after the first input and axis it is the size of, `x.dim0`), and the
        parameters, buffers and constants the graph reads, by their
        state-dict names.

    Raises:
        UnsupportedOperatorError: aten ops or argument values ember does not
            convert (every one listed, with its count and nodes).
        TorchImportError: an input that is not a tensor of `DTYPES`, a size
            ember does not compute, a training graph (buffers updated), or a
            node that does not convert.

    Example:
        >>> ep = torch.export.export(model.eval(), (x,))  # doctest: +SKIP
        >>> mod, params = from_exported_program(ep)  # doctest: +SKIP
    """
    label = "torch.export program"
    return _import(_decompose(ep), {}, label)


class CompiledModel:
    """A compiled model called on torch tensors: the inputs are read in place
    (DLPack), the outputs are torch tensors over the memory the model wrote,
    in the structure the model returns.

    Attributes:
        lib: the compiled module (`export_library`, `params`, `compile_stats`).
        graph_module: its `ember.runtime.GraphModule`.
    """

    def __init__(self, lib: Any, out_spec: Any = None):
        from ember.runtime import GraphModule, cpu

        self.lib = lib
        self.graph_module = GraphModule(lib["default"](cpu()))
        self._out_spec = out_spec

    def __call__(self, *inputs: torch.Tensor) -> Any:
        from ember.runtime import from_dlpack

        arrays = [from_dlpack(t.detach().contiguous()) for t in inputs]
        outputs = [torch.from_dlpack(y) for y in self.graph_module(*arrays)]
        if self._out_spec is None:
            return outputs
        return tree_unflatten(outputs, self._out_spec)


def compile(
    model: torch.nn.Module,
    example_inputs: Sequence[torch.Tensor],
    target: str = "llvm",
    dynamic_shapes: Any = None,
    **options: Any,
) -> CompiledModel:
    """Export `model` (in eval mode) on `example_inputs` and compile it.

    Args:
        model: the module; it is put in eval mode.
        example_inputs: tensors of the shapes the compiled model takes.
        target: the CPU target ("llvm" is this machine).
        dynamic_shapes: `torch.export.export`'s, e.g. `{"x": {0: Dim("batch")}}`:
            the dims given a `Dim` stay symbolic, and the one compiled model
            runs every size of them (`bounds={"x.dim0": 64}` bounds one).
        options: passed to `ember.compile_model` (opt_level, workers, ...).

    Returns:
        A `CompiledModel`, called like the model on its tensors.

    Example:
        >>> m = compile(model, (torch.randn(1, 3, 224, 224),))  # doctest: +SKIP
        >>> y = m(x)  # doctest: +SKIP
    """
    from ember.compiler.model import compile_model

    with torch.no_grad():
        ep = torch.export.export(
            model.eval(), tuple(example_inputs), dynamic_shapes=dynamic_shapes
        )
    module, params = from_exported_program(ep)
    lib = compile_model(module, params=params, target=target, **options)
    return CompiledModel(lib, ep.call_spec.out_spec)


def _frozen_inputs(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]):
    """Dynamo's placeholders that hold the module's parameters and buffers
    (it lifts them to inputs) or a Python float (as a 0-d tensor), by
    placeholder name with their indices."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    floats = _float_inputs(gm)
    frozen = {}
    for i, (node, value) in enumerate(zip(placeholders, example_inputs, strict=True)):
        source = getattr(node.meta.get("grapharg"), "source", None)
        where = source.name if source is not None else ""
        where = where() if callable(where) else str(where)
        if (
            isinstance(value, torch.nn.Parameter)
            or "._buffers[" in where
            or i in floats
        ):
            frozen[i] = node.name
    return frozen


def _float_inputs(gm: torch.fx.GraphModule) -> set[int]:
    """Dynamo's placeholders that pass a Python float as a 0-d tensor, by
    index (read while compiling: dynamo drops its `grapharg`s after)."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    return {
        i
        for i, node in enumerate(placeholders)
        if getattr(node.meta.get("grapharg"), "pass_arg_as_tensor", False)
    }


def _with_floats(
    gm: torch.fx.GraphModule, inputs: Sequence[Any], floats: Collection[int]
) -> torch.fx.GraphModule:
    """`gm` with the Python floats dynamo passes as 0-d tensors (a batch
    norm's `eps`, a float argument under `dynamic=True`) as constants: the
    `.item()` it reads each with is data-dependent to `torch.export`, which
    then fails on the first check of the value (`eps < 0`)."""
    graph = copy.deepcopy(gm.graph)
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    for i in floats:
        node, value = placeholders[i], inputs[i]
        for user in list(node.users):
            if user.op == "call_method" and user.target == "item":
                user.replace_all_uses_with(value.item())
                graph.erase_node(user)
    return torch.fx.GraphModule(gm, graph)


class _DynamoRunner:
    """The compiled graph dynamo calls with every placeholder's value.

    A graph dynamo traced with symbolic sizes (`dynamic=True`, or a second
    shape) is compiled once, symbolically, on its first call: the sizes dynamo
    passes as ints are read from the tensor dims they are (`_SizesFromTensors`),
    each of dynamo's symbols becomes a `Dim` of `torch.export`, and one ember
    library runs every shape dynamo sends it. A graph that cannot be made
    symbolic (a size that is not a dim of an input, an input dim that is an
    expression, an export that specializes a symbol, sizes ember does not
    compute) is compiled for each shape it is called with instead, on the
    first such call, with its sizes as constants.

    The weights are frozen into the compiled model, so a weight changed in
    place must recompile it. torch counts writes through the parameter itself
    (`_version`), but not those through `p.data` (`p.data.copy_(w)`,
    `p.data.mul_(2)`), so each call also compares every weight with the copy
    it was compiled from: a pass over the weights' bytes. `freezing=True`
    (inductor's option of that name) trusts the counter and skips it.
    """

    def __init__(
        self,
        gm: torch.fx.GraphModule,
        example_inputs: Sequence[Any],
        freezing: bool = False,
    ):
        self.gm = gm
        self.freezing = freezing
        self.frozen = _frozen_inputs(gm, example_inputs)
        self.floats = _float_inputs(gm)
        # under dynamic=True, dynamo specializes only the sizes of 1
        dynamic = not torch._dynamo.config.assume_static_by_default
        self.ways: list[_Sizes] = []
        for ones in (dynamic, False):
            way = _symbolic_sizes(gm, self.frozen, ones)
            if way is not None and way not in self.ways:
                self.ways.append(way)
        """How the graph may be compiled symbolically, in the order tried:
        where each input comes from, and which axes are symbolic. Empty: per
        shape."""
        self.symbolic_error: Exception | None = None
        """Why a symbolic graph is compiled per shape after all, if it is."""
        self.compiled: dict[tuple | None, _Compiled] = {}
        # exporting with `Dim`s inside dynamo's compilation breaks its guards:
        # a symbolic graph is exported on its first call
        if not self.ways and not any(_symbolic(v) for v in example_inputs):
            self._build(example_inputs)

    @property
    def symbolic(self) -> bool:
        """Whether the graph is compiled once for every shape."""
        return bool(self.ways)

    def _build(self, inputs: Sequence[Any]) -> _Compiled:
        while self.ways:
            try:
                return self._build_symbolic(inputs, self.ways[0])
            except UnsupportedOperatorError:
                raise
            except Exception as e:
                # export specialized a symbol (a size of 1 the graph depends
                # on), or ember cannot compile a size expression: the sizes
                # dynamo made symbolic, else constants of each shape, still
                # give right results
                self.symbolic_error = e
                self.ways.pop(0)
        # the values, compact: a graph after a graph break may take a
        # transposed intermediate, which the aten decomposition of a `view`
        # of it then refuses
        compact = tuple(
            v.contiguous() if isinstance(v, torch.Tensor) else v for v in inputs
        )
        with torch.no_grad(), _outside_dynamo():
            gm = _with_floats(self.gm, inputs, self.floats)
            ep = torch.export.export(gm, compact, strict=False)
        values = {i: (name, inputs[i]) for i, name in self.frozen.items()}
        # sizes dynamo passes as ints are constants of this compilation
        values |= {
            i: (f"size{i}", v) for i, v in enumerate(inputs) if isinstance(v, int)
        }
        self.user = [i for i in range(len(inputs)) if i not in values]
        return self._compile(ep, values, inputs, _shapes(inputs))

    def _build_symbolic(self, inputs: Sequence[Any], sizes: _Sizes) -> _Compiled:
        tensors = _at_least_two([inputs[i] for i in sizes.tensors], sizes.dims)
        with torch.no_grad(), _outside_dynamo():
            ep = torch.export.export(
                _SizesFromTensors(
                    _with_floats(self.gm, inputs, self.floats), sizes.sources
                ),
                tuple(tensors),
                dynamic_shapes=(sizes.dynamic_shapes(),),
                strict=False,
            )
        at = {i: j for j, i in enumerate(sizes.tensors)}
        values = {at[i]: (name, inputs[i]) for i, name in self.frozen.items()}
        self.user = [i for i in sizes.tensors if at[i] not in values]
        return self._compile(ep, values, inputs, None)

    def _compile(
        self, ep: ExportedProgram, values: dict, inputs: Sequence[Any], key: Any
    ) -> _Compiled:
        from ember.compiler.model import compile_model

        label = "torch.compile(backend='ember') graph"
        module, params = _import(_decompose(ep), values, label)
        computes = _library_key(module, params)
        model = _LIBRARIES.get(computes)
        if model is None:
            model = CompiledModel(compile_model(module, params=params))
            _LIBRARIES[computes] = model
        weights = [inputs[i] for i in self.frozen]
        copies = [] if self.freezing else [_bits(w).clone() for w in weights]
        entry = _Compiled(model, _versions(weights), copies)
        self.compiled[key] = entry
        return entry

    @property
    def model(self) -> CompiledModel:
        """The model compiled last."""
        return list(self.compiled.values())[-1].model

    def __call__(self, *inputs: Any) -> Any:
        entry = self.compiled.get(None if self.symbolic else _shapes(inputs))
        if entry is None or not entry.current([inputs[i] for i in self.frozen]):
            entry = self._build(inputs)
        return entry.model(*(inputs[i] for i in self.user))


@contextlib.contextmanager
def _outside_dynamo():
    """`torch.export` as on a graph of the user's: without the guards of the
    frame dynamo is compiling (their `L['x']` names are undefined in an
    exported program) and with export's own 0/1 rules, even where the user
    traces with `backed_size_oblivious`."""
    # the config module's `patch` is made at run time, unseen by pyright
    patch = cast(Any, _fx_config).patch
    with tracing(None), patch(backed_size_oblivious=False):
        yield


def _at_least_two(tensors: list[torch.Tensor], dims: list[dict[int, str]]):
    """The tensors to export a symbolic graph on: each symbolic axis of size 0
    or 1 (dynamo keeps such a size symbolic when it is `mark_unbacked` or
    traced `backed_size_oblivious`) repeated to 2, so that `torch.export`
    does not specialize the symbol to it. Every axis of one symbol grows
    alike; the graph is traced on shapes alone."""
    small = {
        symbol
        for t, axes in zip(tensors, dims, strict=True)
        for axis, symbol in axes.items()
        if t.shape[axis] < 2
    }
    grown = []
    for t, axes in zip(tensors, dims, strict=True):
        for axis, symbol in axes.items():
            if symbol in small:
                shape = [*t.shape[:axis], 2, *t.shape[axis + 1 :]]
                t = t.expand(shape) if t.shape[axis] == 1 else t.new_zeros(shape)
        grown.append(t.contiguous())
    return grown


def _library_key(module: ModuleOp, params: Mapping[str, np.ndarray]) -> str:
    """What a compiled model computes: its graph IR and its weights' bytes."""
    digest = hashlib.sha256(str(module).encode())
    for name, array in sorted(params.items()):
        digest.update(f"{name}:{array.dtype}:{array.shape}".encode())
        digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()


_LIBRARIES: weakref.WeakValueDictionary[str, CompiledModel] = (
    weakref.WeakValueDictionary()
)
"""The models compiled for dynamo's graphs while some graph uses them. Dynamo
traces one function into several graphs (the graph specialized to a batch of
1 under `dynamic=True`, the symbolic one it traces next); those that import
to the same graph IR with the same weights compute the same function, and
share one library."""


@dataclass
class _Sizes:
    """How a symbolic dynamo graph is exported: on its tensors alone."""

    tensors: list[int]
    """The placeholders that are tensors, by index."""
    sources: list[tuple[int, int | None]]
    """Per placeholder, the tensor (an index into `tensors`) it is, or
    (tensor, axis) for a size it is the dim of."""
    dims: list[dict[int, str]]
    """Per tensor, its symbolic axes' symbols (dynamo's names; "one" for
    an axis of size 1 made symbolic)."""

    def dynamic_shapes(self) -> tuple[dict[int, Any] | None, ...]:
        """`torch.export`'s `dynamic_shapes`: `Dim.DYNAMIC`, so that export
        keeps each symbolic, raising if it would specialize one, while it
        takes the guards dynamo took too (a pooled size `s // 2 != 1`
        choosing between equal decompositions) and relates the sizes the
        graph makes equal."""
        return tuple(
            {axis: torch.export.Dim.DYNAMIC for axis in axes} or None
            for axes in self.dims
        )


def _symbolic_sizes(
    gm: torch.fx.GraphModule, frozen: Collection[int], ones: bool = False
) -> _Sizes | None:
    """How to export `gm` symbolically from the values dynamo recorded for its
    placeholders: None when they are static, or when a size is no dim of a
    tensor, a dim is an expression (`2*s0`) or a weight's dim is symbolic.

    `ones`: an input's axes of size 1 are symbolic too, all one symbol (as
    dynamo's duck sizing makes equal sizes one), for the graph dynamo
    specialized to a size of 1 under `dynamic=True`."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    values = [n.meta.get("example_value") for n in placeholders]
    tensors = [i for i, v in enumerate(values) if isinstance(v, torch.Tensor)]
    dims: list[dict[int, str]] = []
    found: dict[str, tuple[int, int]] = {}  # dynamo's symbol -> (tensor, axis)
    for j, i in enumerate(tensors):
        axes = {}
        for axis, d in enumerate(values[i].shape):
            expr = getattr(getattr(d, "node", None), "expr", None)
            if ones and isinstance(d, int) and d == 1 and i not in frozen:
                found.setdefault("one", (j, axis))
                axes[axis] = "one"
                continue
            if expr is None or expr.is_number:
                continue
            if not expr.is_Symbol or i in frozen:
                return None
            found.setdefault(str(expr), (j, axis))
            axes[axis] = str(expr)
        dims.append(axes)
    sources: list[tuple[int, int | None]] = []
    for i, v in enumerate(values):
        if i in tensors:
            sources.append((tensors.index(i), None))
        elif isinstance(v, torch.SymInt) and str(v.node.expr) in found:
            sources.append(found[str(v.node.expr)])
        else:
            return None
    return _Sizes(tensors, sources, dims) if found else None


class _SizesFromTensors(torch.nn.Module):
    """Dynamo's graph called on its tensors alone: the sizes it takes as ints
    are read from the tensors they are dims of, so that `torch.export` traces
    them as `sym_size`s of `Dim`s instead of as constants."""

    def __init__(self, gm: torch.fx.GraphModule, sources: list[tuple[int, int | None]]):
        super().__init__()
        self.gm = gm
        self.sources = sources

    def forward(self, *inputs: torch.Tensor) -> Any:
        return self.gm(
            *[inputs[j] if a is None else inputs[j].size(a) for j, a in self.sources]
        )


@dataclass
class _Compiled:
    """A model compiled for one shape (or all), and what its weights were."""

    model: CompiledModel
    versions: list[tuple[int, int]]
    copies: list[torch.Tensor]
    """The weights' bytes at compile time; empty under `freezing`."""

    def current(self, weights: list[torch.Tensor]) -> bool:
        """Whether `weights` are still those the model was compiled with."""
        if _versions(weights) != self.versions:
            return False
        return all(
            torch.equal(_bits(w), c) for w, c in zip(weights, self.copies, strict=False)
        )


def _versions(weights: Sequence[torch.Tensor]) -> list[tuple[int, int]]:
    return [(w._version, w.data_ptr()) for w in weights]


_SAME_SIZE_INT = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def _bits(t: torch.Tensor) -> torch.Tensor:
    """`t`'s bytes as integers, so a NaN weight compares equal to itself."""
    t = t.detach().contiguous()
    as_int = _SAME_SIZE_INT.get(t.element_size())
    return t.view(as_int) if as_int is not None else t


def _symbolic(value: Any) -> bool:
    if isinstance(value, torch.Tensor):
        return not all(isinstance(d, int) for d in value.shape)
    return not isinstance(value, int | float | bool)


def _shapes(inputs: Sequence[Any]) -> tuple:
    return tuple(tuple(v.shape) if isinstance(v, torch.Tensor) else v for v in inputs)


def ember_backend(
    gm: torch.fx.GraphModule,
    example_inputs: Sequence[Any],
    options: Mapping[str, Any] | None = None,
):
    """TorchDynamo backend: `torch.compile(model, backend="ember")`.

    The weights are frozen into the compiled model and compared with what it
    was compiled from on every call: a weight changed in place, even through
    `p.data`, recompiles it. `options={"freezing": True}` (as inductor's
    `freezing`) skips the comparison, a pass over the weights' bytes per call,
    and notices only writes torch counts (`with torch.no_grad(): p.mul_(2)`,
    not `p.data.mul_(2)`).

    Compiles each graph dynamo captures for the CPU with ember (inference only:
    call the model under `torch.no_grad()` or `torch.inference_mode()`).
    A graph with ops ember does not convert is not run eagerly: the
    `UnsupportedOperatorError` listing them reaches the caller (as dynamo's
    `BackendCompilerFailed`), unless `torch._dynamo.config.suppress_errors`
    makes dynamo fall back to eager.
    """
    if torch.is_grad_enabled() and any(
        isinstance(t, torch.Tensor) and t.requires_grad for t in example_inputs
    ):
        raise TorchImportError(
            "torch.compile(backend='ember') compiles inference graphs: call the "
            "model under torch.no_grad() or torch.inference_mode()"
        )
    options = dict(options or {})
    freezing = options.get("freezing", False)
    if set(options) - {"freezing"} or not isinstance(freezing, bool):
        raise TorchImportError(
            "torch.compile(backend='ember') takes options={'freezing': bool}, "
            f"got {options!r}"
        )
    return _DynamoRunner(gm, example_inputs, freezing)


def _register() -> None:
    from torch._dynamo import list_backends, register_backend

    # An installed ember declares the entry point, which torch loads itself.
    if "ember" not in list_backends(exclude_tags=()):
        register_backend(ember_backend, name="ember")


_register()
