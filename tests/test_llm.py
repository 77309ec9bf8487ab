"""Generative models (issue 26): `ember.llm` compiles a causal LM folder as
`save_pretrained` writes it (small configs, random weights) into one step
library over `n` new and `past` cached tokens, and its greedy generation
gives exactly the tokens of `transformers`' `generate`, with the logits of
every step within 1e-4. An exported engine generates in a fresh process on
the runtime alone; `ember generate` prints the ids or the text."""

import json
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import ember.llm  # noqa: E402
from ember.runtime import EmberValueError  # noqa: E402
from ember.tools.ember_generate import main as generate_main  # noqa: E402

VOCAB = 300
PROMPT = [5, 17, 42, 99, 3, 250, 7]
NEW = 10


def _small(**extra):
    return {
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,  # grouped-query attention
        "hidden_size": 64,
        "intermediate_size": 96,
        "max_position_embeddings": 64,
        "vocab_size": VOCAB,
        **extra,
    }


CONFIGS = {
    "gpt2": lambda: transformers.GPT2Config(
        n_layer=2, n_head=4, n_embd=64, n_positions=64, vocab_size=VOCAB
    ),
    "llama": lambda: transformers.LlamaConfig(**_small()),
    "qwen2": lambda: transformers.Qwen2Config(**_small()),  # biases on q, k, v
    "mistral": lambda: transformers.MistralConfig(**_small(sliding_window=None)),
}
CLASSES = {
    "gpt2": "GPT2LMHeadModel",
    "llama": "LlamaForCausalLM",
    "qwen2": "Qwen2ForCausalLM",
    "mistral": "MistralForCausalLM",
}


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """arch -> (its save_pretrained folder, the model read back)."""
    made = {}

    def get(arch: str):
        if arch not in made:
            torch.manual_seed(0)
            folder = tmp_path_factory.mktemp(arch)
            cls = getattr(transformers, CLASSES[arch])
            cls(CONFIGS[arch]()).save_pretrained(folder)
            made[arch] = folder, cls.from_pretrained(folder).eval()
        return made[arch]

    return get


@pytest.fixture(scope="module")
def engines(folders):
    made = {}

    def get(arch: str):
        if arch not in made:
            made[arch] = ember.llm.load(folders(arch)[0], max_context=32)
        return made[arch]

    return get


def _reference(model, prompt, new):
    """transformers' greedy ids and each step's logits."""
    with torch.no_grad():
        out = model.generate(
            torch.tensor([prompt]),
            max_new_tokens=new,
            do_sample=False,
            output_scores=True,
            return_dict_in_generate=True,
            pad_token_id=0,
            eos_token_id=None,
        )
    return out.sequences[0, len(prompt) :].tolist(), [s[0].numpy() for s in out.scores]


@pytest.mark.parametrize(
    "arch",
    ["gpt2", "llama", "qwen2", "mistral"],
)
def test_greedy_generation_is_transformers_token_for_token(arch, folders, engines):
    _, model = folders(arch)
    engine = engines(arch)
    want, scores = _reference(model, PROMPT, NEW)
    assert list(engine.generate(PROMPT, NEW)) == want
    engine.reset()
    logits = engine.prefill(PROMPT)  # the prompt in one call
    for step, expected in enumerate(scores):
        scale = np.abs(expected).max()
        assert np.abs(logits - expected).max() <= 1e-4 * scale, f"step {step}"
        if step + 1 < len(scores):
            logits = engine.decode(want[step])  # one token a call
    assert engine.length == len(PROMPT) + NEW - 1


def test_a_prompt_in_pieces_is_the_prompt_at_once(engines):
    """Prefill after tokens already cached sees them: the causal mask spans
    the past and the new tokens."""
    engine = engines("llama")
    engine.reset()
    whole = engine.prefill(PROMPT)
    engine.reset()
    engine.prefill(PROMPT[:3])
    pieces = engine.prefill(PROMPT[3:])
    np.testing.assert_allclose(pieces, whole, rtol=1e-5, atol=1e-5)


def test_sampling_is_seeded_and_top_k_1_is_greedy(engines):
    engine = engines("gpt2")
    greedy = list(engine.generate(PROMPT, 6))
    assert list(engine.generate(PROMPT, 6, greedy=False, top_k=1, seed=3)) == greedy
    a = list(engine.generate(PROMPT, 6, greedy=False, temperature=2.0, seed=7))
    b = list(engine.generate(PROMPT, 6, greedy=False, temperature=2.0, seed=7))
    assert a == b and all(0 <= t < VOCAB for t in a)
    nucleus = list(engine.generate(PROMPT, 6, greedy=False, top_p=1e-6, seed=1))
    assert nucleus == greedy  # the smallest set reaching any mass: the top token
    stop = greedy[2]
    early = list(engine.generate(PROMPT, 6, eos_token_id=stop))
    assert early == greedy[: greedy.index(stop) + 1]


def test_bad_calls_are_refused_by_name(engines, folders, tmp_path):
    engine = engines("gpt2")
    with pytest.raises(EmberValueError, match=r"token ids must be in \[0, 300\)"):
        engine.prefill([1, VOCAB])
    engine.reset()
    engine.prefill(list(range(30)))
    with pytest.raises(EmberValueError, match="holds 32 tokens: 30 in the cache and 3"):
        engine.prefill([1, 2, 3])
    with pytest.raises(EmberValueError, match="top_p must be in"):
        list(engine.generate(PROMPT, 2, greedy=False, top_p=0))
    with pytest.raises(EmberValueError, match="max_context must be an int in"):
        ember.llm.load(folders("gpt2")[0], max_context=65)
    with pytest.raises(EmberValueError, match="no config.json"):
        ember.llm.load(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["BertModel"]}))
    with pytest.raises(EmberValueError, match="'BertModel'.* not one ember.llm builds"):
        ember.llm.load(tmp_path)


def test_an_exported_engine_generates_without_the_compiler(engines, folders, tmp_path):
    engine = engines("llama")
    want = list(engine.generate(PROMPT, NEW))
    lib = tmp_path / "llama.so"
    engine.export(lib)
    code = f"""
import sys
from ember.runtime import load_module
from ember.runtime.llm import Engine
engine = Engine(load_module({str(lib)!r}))
print(list(engine.generate({PROMPT!r}, {NEW})))
assert "xdsl" not in sys.modules and "llvmlite" not in sys.modules
assert not any(m.startswith(("ember.compiler", "ember.llm")) for m in sys.modules)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(want)


def test_ember_generate_prints_ids_and_text(folders, tmp_path, capsys):
    from tokenizers import Tokenizer, models, pre_tokenizers

    folder, model = folders("gpt2")
    want, _ = _reference(model, PROMPT, 5)
    ids = ",".join(map(str, PROMPT))
    lib = tmp_path / "gpt2.so"
    args = ["--max-new-tokens", "5", "--max-context", "16", "--export", str(lib)]
    assert generate_main([str(folder), "--prompt-ids", ids, *args]) == 0
    out, err = capsys.readouterr()
    assert out.split() == [str(t) for t in want]
    assert "prefill: 7 tokens" in err and "decode: 4 tokens" in err
    # the exported engine, and text through the folder's tokenizer
    assert generate_main([str(lib), "--prompt-ids", ids, "--max-new-tokens", "5"]) == 0
    assert capsys.readouterr().out.split() == [str(t) for t in want]
    words = {f"w{i}": i for i in range(VOCAB)}
    tokenizer = Tokenizer(models.WordLevel(words, unk_token="w0"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.save(str(folder / "tokenizer.json"))
    text = " ".join(f"w{t}" for t in PROMPT)
    assert generate_main([str(folder), "--prompt", text, *args[:4]]) == 0
    assert capsys.readouterr().out.split() == [f"w{t}" for t in want]


@pytest.mark.parametrize(
    "args, status, message",
    [
        (["--prompt-ids", "1,x"], 2, "--prompt-ids: expected ints"),
        (["--prompt-ids", "1", "--max-new-tokens", "0"], 2, "positive count"),
        (["--prompt-ids", "1", "--greedy", "--top-k", "3"], 2, "--greedy and sampling"),
        (["--prompt", "hi"], 2, "--prompt needs"),
    ],
)
def test_ember_generate_bad_arguments(tmp_path, capsys, args, status, message):
    assert generate_main([str(tmp_path), *args]) == status
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_ember_generate_on_a_folder_without_a_model(tmp_path, capsys):
    assert generate_main([str(tmp_path), "--prompt-ids", "1"]) == 1
    assert "no config.json" in capsys.readouterr().err
    assert generate_main([str(tmp_path / "none.so"), "--prompt-ids", "1"]) == 2
    assert "no such folder or library" in capsys.readouterr().err


@pytest.mark.parametrize(
    "quantize, agree, error", [("int8", 10, 0.03), ("int4", 7, 0.3)]
)
def test_quantized_weights_keep_to_float32(quantize, agree, error, folders, engines):
    """Every dense layer (the LM head too) as `graph.dense_dequant`: teacher
    forced on float32's stream, the logits stay within `error` of float32's
    (relative to their largest) and the top-1 token agrees at `agree` or more
    of 10 steps (8 bits per channel: all; 4 bits in groups of 32: these
    random weights give near-flat logits, so a few flip)."""
    folder, _ = folders("llama")
    ref = engines("llama")
    stream = list(ref.generate(PROMPT, NEW))
    engine = ember.llm.load(folder, max_context=32, quantize=quantize)
    ref.reset()
    a, b = ref.prefill(PROMPT), engine.prefill(PROMPT)
    same = 0
    for token in stream:
        same += int(np.argmax(a) == np.argmax(b))
        assert np.abs(a - b).max() <= error * np.abs(a).max()
        a, b = ref.decode(token), engine.decode(token)
    assert same >= agree


def test_quantize_options_are_checked(folders):
    folder, _ = folders("gpt2")
    with pytest.raises(EmberValueError, match="quantize must be one of int8, int4"):
        ember.llm.load(folder, quantize="int3")
    with pytest.raises(EmberValueError, match="group_size must be an even int"):
        ember.llm.load(folder, quantize="int4", group_size=3)
    with pytest.raises(EmberValueError, match="group size 48 does not divide its 64"):
        ember.llm.load(folder, quantize="int4", group_size=48)


def test_an_engine_of_another_library_is_refused():
    import ember
    from ember.runtime.llm import Engine

    relu = """func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = graph.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}"""
    with pytest.raises(EmberValueError, match="expected an ember.llm step library"):
        Engine(ember.compile_model(relu))
