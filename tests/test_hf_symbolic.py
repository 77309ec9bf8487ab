"""Hugging Face models as people export them (issue 25): GPT-2, BERT and a
Llama with grouped-query attention, built by `transformers` from a small
config with random weights, written by `save_pretrained` and read back by
`from_pretrained`, then exported to ONNX with dynamic batch and sequence
axes by torch's classic exporter and by its dynamo exporter. Each compiles
once without `shape=` and matches onnxruntime at several shapes.

Phi-3 (slow) slices an empty rotary pass-through, which Concat drops.
Their mask code computes with the sizes as data (`batch_idx * seq +
kv_idx`, a cast of the length), which becomes graph.sizes; BERT's token
types are a GatherElements and GPT-2's padding mask (dynamo) a GatherND
over symbolic dims, whose offsets become graph.range."""

import warnings

import numpy as np
import pytest

import ember
from ember.runtime import GraphModule, cpu

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
ort = pytest.importorskip("onnxruntime")

VOCAB = 500


def _config(arch: str):
    if arch == "gpt2":
        return transformers.GPT2Config(
            n_layer=2, n_head=4, n_embd=64, n_positions=128, vocab_size=VOCAB
        )
    small = {
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "hidden_size": 64,
        "intermediate_size": 128,
        "max_position_embeddings": 128,
        "vocab_size": VOCAB,
    }
    if arch == "bert":
        return transformers.BertConfig(**small)
    grouped = {**small, "num_key_value_heads": 2}  # grouped-query attention
    if arch == "phi3":  # rotates every channel: an empty pass-through slice
        return transformers.Phi3Config(**grouped, pad_token_id=0)
    return transformers.LlamaConfig(**grouped)


class _Logits(torch.nn.Module):
    """(ids, mask) -> logits, or the last hidden state for BERT."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, ids, mask):
        out = self.model(input_ids=ids, attention_mask=mask)
        return out.logits if "logits" in out else out.last_hidden_state


def _exported(arch: str, exporter: str, folder) -> str:
    torch.manual_seed(0)
    classes = {
        "gpt2": transformers.GPT2LMHeadModel,
        "bert": transformers.BertModel,
        "llama": transformers.LlamaForCausalLM,
        "phi3": transformers.Phi3ForCausalLM,
    }
    cls = classes[arch]
    cls(_config(arch)).save_pretrained(folder)
    model = cls.from_pretrained(folder).eval()
    model.config.use_cache = False
    ids = torch.randint(0, VOCAB, (2, 7))
    mask = torch.ones(2, 7, dtype=torch.int64)
    path = folder / "model.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if exporter == "classic":
            axes = {n: {0: "batch", 1: "seq"} for n in ("ids", "mask", "y")}
            torch.onnx.export(
                _Logits(model),
                (ids, mask),
                str(path),
                dynamo=False,
                input_names=["ids", "mask"],
                output_names=["y"],
                dynamic_axes=axes,
                opset_version=17,
            )
        else:
            dims = {0: torch.export.Dim("batch"), 1: torch.export.Dim("seq", max=128)}
            program = torch.onnx.export(
                _Logits(model),
                (ids, mask),
                dynamo=True,
                input_names=["ids", "mask"],
                output_names=["y"],
                dynamic_shapes={"ids": dims, "mask": dims},
                verbose=False,
            )
            assert program is not None
            program.save(str(path), external_data=False)
    return str(path)


CASES = [
    ("gpt2", "classic"),
    ("llama", "dynamo"),
    ("bert", "classic"),
    pytest.param("gpt2", "dynamo", marks=pytest.mark.slow),
    pytest.param("llama", "classic", marks=pytest.mark.slow),
    pytest.param("bert", "dynamo", marks=pytest.mark.slow),
    pytest.param("phi3", "classic", marks=pytest.mark.slow),
]


@pytest.mark.parametrize("arch,exporter", CASES)
def test_a_hugging_face_model_compiles_once_and_runs_at_any_shape(
    arch, exporter, tmp_path
):
    model = _exported(arch, exporter, tmp_path)
    library = ember.compile_model(model)
    m = GraphModule(library["default"](cpu()))
    session = ort.InferenceSession(model)
    rng = np.random.default_rng(0)
    for batch, seq in ((1, 1), (1, 5), (3, 16), (2, 33)):
        ids = rng.integers(0, VOCAB, (batch, seq)).astype(np.int64)
        mask = np.ones((batch, seq), np.int64)
        mask[0, seq - seq // 3 :] = 0  # padding at the end of the first
        feeds = {"ids": ids, "mask": mask}
        got, (want,) = m(**feeds), session.run(None, feeds)
        got = got[0] if isinstance(got, list | tuple) else got
        assert got.shape == want.shape, (batch, seq)
        error = np.abs(got - want).max() / np.abs(want).max()
        assert error <= 1e-4, (batch, seq, error)


# -- torch.compile(backend="ember") and torch.export on the same models ---------------


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()


def _hf_model(arch: str, folder):
    torch.manual_seed(0)
    cls = {"gpt2": transformers.GPT2LMHeadModel, "llama": transformers.LlamaForCausalLM}
    cls[arch](_config(arch)).save_pretrained(folder)
    return cls[arch].from_pretrained(folder, use_cache=False).eval()


def _masked(batch: int, seq: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, VOCAB, (batch, seq), generator=g)
    mask = torch.ones_like(ids)
    mask[0, seq - seq // 3 :] = 0
    return ids, mask


@pytest.mark.slow  # 20 s and more: dynamo traces HF's code (its converters:
# tests/test_torch_symbolic.py::test_mask_code_converts_symbolically)
@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_torch_compile_dynamic_runs_a_hugging_face_model_at_every_shape(arch, tmp_path):
    """The mask code (arange to the length, `&` of masks, advanced indexing
    `mask[batch_idx, kv_idx]`, slices to the length) and attention
    (`scaled_dot_product_attention`, decomposed as its math) compile
    symbolically: after the batch-1 graph, which reads the batch as an int,
    one library runs every later shape."""
    model = _hf_model(arch, tmp_path)
    compiled = torch.compile(model, backend="ember", dynamic=True)
    with torch.no_grad():
        for seed, (batch, seq) in enumerate(((1, 5), (3, 16), (8, 9), (2, 33))):
            ids, mask = _masked(batch, seq, seed)
            got = compiled(input_ids=ids, attention_mask=mask).logits
            want = model(input_ids=ids, attention_mask=mask).logits
            error = float((got - want).abs().max() / want.abs().max())
            assert error <= 1e-4, (batch, seq, error)


def test_torch_export_of_a_hugging_face_model_at_batch_3(tmp_path):
    """`ember.frontends.torch.compile` on GPT-2 with a padding mask at batch 3:
    torch's own decomposition of attention traced a result laid out heads
    inner, whose `view` then failed."""
    from ember.frontends import torch as ember_torch

    model = _hf_model("gpt2", tmp_path)

    class Logits(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, ids, mask):
            return self.model(input_ids=ids, attention_mask=mask).logits

    ids, mask = _masked(3, 16, 0)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = ember_torch.compile(Logits().eval(), (ids, mask))
        got, want = compiled(ids, mask), Logits()(ids, mask)
    assert float((got - want).abs().max() / want.abs().max()) <= 1e-4


# -- a decoder step with its KV cache as inputs and outputs ---------------------------


@pytest.mark.parametrize(
    "arch", ["gpt2", pytest.param("llama", marks=pytest.mark.slow)]
)
def test_a_decoder_with_its_kv_cache_compiles_once_for_every_length(arch, tmp_path):
    """The step onnxruntime users export: ids [b, s], a mask over past + s,
    each layer's past keys and values [b, heads, past, d] in and the grown
    cache out (a Concat along the symbolic past). One library runs the first
    token, later tokens and a prompt chunk at any past length."""
    from transformers.cache_utils import DynamicCache

    model, layers = _hf_model(arch, tmp_path), 2
    heads = 4 if arch == "gpt2" else 2  # the Llama's key-value heads

    class Step(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, ids, mask, *past):
            cache = DynamicCache()
            for layer in range(layers):
                cache.update(past[2 * layer], past[2 * layer + 1], layer)
            out = self.model(
                input_ids=ids,
                attention_mask=mask,
                past_key_values=cache,
                use_cache=True,
            )
            grown = out.past_key_values.layers
            return out.logits, *[t for g in grown for t in (g.keys, g.values)]

    kv = [f"past{i}" for i in range(2 * layers)]
    axes = {"ids": {0: "b", 1: "s"}, "mask": {0: "b", 1: "total"}}
    axes |= {n: {0: "b", 2: "past"} for n in kv}
    axes |= {"logits": {0: "b", 1: "s"}} | {f"new{n}": {0: "b", 2: "total"} for n in kv}
    example = [
        torch.zeros(2, 2, dtype=torch.int64),
        torch.ones(2, 5, dtype=torch.int64),
    ]
    example += [torch.randn(2, heads, 3, 16) for _ in kv]
    path = str(tmp_path / "step.onnx")
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Step().eval(),
            tuple(example),
            path,
            dynamo=False,
            input_names=["ids", "mask", *kv],
            output_names=["logits", *[f"new{n}" for n in kv]],
            dynamic_axes=axes,
            opset_version=17,
        )
    m = GraphModule(ember.compile_model(path)["default"](cpu()))
    session = ort.InferenceSession(path)
    rng = np.random.default_rng(0)
    for batch, past, seq in ((1, 1, 1), (1, 7, 1), (2, 5, 3), (3, 20, 1)):
        feeds = {
            "ids": rng.integers(0, VOCAB, (batch, seq)).astype(np.int64),
            "mask": np.ones((batch, past + seq), np.int64),
        }
        feeds |= {
            n: rng.standard_normal((batch, heads, past, 16), np.float32) for n in kv
        }
        for got, want in zip(m(**feeds), session.run(None, feeds), strict=True):
            assert got.shape == want.shape
            assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()
