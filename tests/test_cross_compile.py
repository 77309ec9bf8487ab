"""Cross-compilation: scheduled TE kernels built for aarch64, riscv64 and wasm32.

The objects are checked at the byte level (ELF class, byte order, e_machine,
RISC-V float ABI flags; the Wasm magic and version), the assembly for the vector
instructions the requested features allow, and, where `wasm-ld` and `node` are
installed, the wasm32 kernel is linked and run against numpy.
"""

import json
import re
import shutil
import subprocess

import llvmlite.binding as llvm
import numpy as np
import pytest

import ember
from ember import te
from ember.backends.llvm import target as target_module
from ember.backends.llvm.target import Target
from ember.runtime import EmberError

N = 1000  # not a multiple of the split factor: the kernel has a guarded tail

AARCH64 = "llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-v2 -mattr=+sve"
RISCV64 = "llvm -mtriple=riscv64-linux-gnu -mattr=+m,+a,+f,+d,+c,+v"
WASM32 = "llvm -mtriple=wasm32-unknown-unknown -mattr=+simd128"

ELF_MACHINE = {"aarch64": 183, "riscv64": 243}
EF_RISCV_RVC, EF_RISCV_FLOAT_ABI_DOUBLE = 0x1, 0x4
WASM_HEADER = b"\0asm\x01\0\0\0"


def fma_kernel(target: str, parallel: bool = True, name: str = "fma"):
    """C = A * B + A over N floats: split by 16, inner loop vectorized, outer
    loop parallel."""
    A = te.placeholder((N,), name="A")
    B = te.placeholder((N,), name="B")
    C = te.compute((N,), lambda i: A[i] * B[i] + A[i], name="C")
    s = te.create_schedule(C.op)
    outer, inner = s[C].split(C.op.axis[0], factor=16)
    s[C].vectorize(inner)
    if parallel:
        s[C].parallel(outer)
    return ember.build(s, [A, B, C], target=target, name=name)


def elf_header(obj: bytes) -> dict[str, int]:
    """The fields of an ELF header the tests check."""
    assert obj[:4] == b"\x7fELF", obj[:16]
    little = obj[5] == 1
    order = "little" if little else "big"
    flags_at = 48 if obj[4] == 2 else 36
    return {
        "class": obj[4],  # 1: 32-bit, 2: 64-bit
        "data": obj[5],  # 1: little endian, 2: big endian
        "type": int.from_bytes(obj[16:18], order),  # 1: relocatable
        "machine": int.from_bytes(obj[18:20], order),
        "flags": int.from_bytes(obj[flags_at : flags_at + 4], order),
    }


def has_instruction(asm: str, pattern: str) -> bool:
    return re.search(rf"^\s+(?:{pattern})\b", asm, re.M) is not None


@pytest.mark.parametrize(
    ("target", "vector_instructions"),
    [
        (AARCH64, [r"fmla"]),
        (RISCV64, [r"vle32\.v", r"vse32\.v", r"vfmadd\.vv|vfmacc\.vv"]),
        (WASM32, [r"f32x4\.mul", r"f32x4\.add", r"v128\.load"]),
    ],
    ids=["aarch64", "riscv64", "wasm32"],
)
def test_scheduled_kernel_compiles_for_the_target(
    target, vector_instructions, tmp_path
):
    mod = fma_kernel(target)
    t = mod.target
    assert not t.is_host
    assert f"-mtriple={t.triple} is not this machine's" in t.not_host_reason
    asm = mod.get_source("asm")
    for pattern in vector_instructions:
        assert has_instruction(asm, pattern), f"no {pattern} in\n{asm}"
    assert f'target triple = "{t.triple}"' in mod.get_source("ll")

    obj = mod.object_code()
    if t.arch == "wasm32":
        assert obj[:8] == WASM_HEADER
    else:
        header = elf_header(obj)
        assert header["class"] == 2 and header["data"] == 1 and header["type"] == 1
        assert header["machine"] == ELF_MACHINE[t.arch]
    # the symbols: NUL-terminated in ELF's string table, length-prefixed in Wasm
    assert re.search(rb"(\0fma\0|\x03fma)", obj) and b"__ember_metadata" in obj

    mod.save(tmp_path / "k.o")
    mod.save(tmp_path / "k.s")
    mod.save(tmp_path / "k.ll")
    assert (tmp_path / "k.o").read_bytes() == obj
    assert (tmp_path / "k.s").read_text() == asm
    assert (tmp_path / "k.ll").read_text() == mod.get_source("ll")


@pytest.mark.parametrize(
    ("target", "vector"),
    [
        ("llvm -mtriple=riscv64-linux-gnu", r"v[a-z0-9.]+\.v[vxfi]?|vsetivli|vsetvli"),
        ("llvm -mtriple=wasm32-unknown-unknown", r"f32x4\.\w+|v128\.\w+"),
    ],
    ids=["riscv64", "wasm32"],
)
def test_no_vector_instructions_unless_asked(target, vector):
    """Without +v / +simd128 the same vectorized schedule becomes scalar code:
    features are the target's, never assumed."""
    asm = fma_kernel(target).get_source("asm")
    assert not has_instruction(asm, vector), asm
    assert has_instruction(asm, r"fmadd\.s|fmul\.s|f32\.mul")


def test_riscv64_linux_is_rv64gc_with_the_double_float_abi():
    """As clang does, riscv64 Linux without -mcpu means RV64GC and lp64d, so the
    object links with the system's libraries; -mattr adds to it."""
    t = Target("llvm -mtriple=riscv64-linux-gnu -mattr=+v")
    assert t.features == "+m,+a,+f,+d,+c,+v"
    flags = elf_header(fma_kernel(str(t)).object_code())["flags"]
    assert flags & EF_RISCV_FLOAT_ABI_DOUBLE and flags & EF_RISCV_RVC
    bare = Target("llvm -mtriple=riscv64-unknown-elf")
    assert bare.features == "" and not bare.has_openmp


def test_linux_targets_call_libgomp_and_wasm32_runs_parallel_loops_serially():
    for target in (AARCH64, RISCV64):
        mod = fma_kernel(target)
        assert mod.target.has_openmp
        assert "GOMP_parallel" in mod.get_source("asm")
        assert b"GOMP_parallel" in mod.object_code()
    wasm = fma_kernel(WASM32)
    assert not wasm.target.has_openmp
    assert "parallel" in wasm.get_source("loop")  # the schedule is the same
    assert not re.search(r"@(GOMP_|omp_)", wasm.get_source("ll"))  # inlined away
    assert b"GOMP" not in wasm.object_code() and b"omp_get" not in wasm.object_code()


def test_wasm32_entry_reads_8_byte_argument_slots():
    """EmberValue is 8 bytes on every machine, also where pointers have 4: the
    entry reads argument i's DLTensor* at args + 8 * i (and the DLTensor's fields
    at wasm32's offsets, through LLVM's struct layout)."""
    ll = fma_kernel(WASM32).get_source("ll")
    slots = re.findall(r"getelementptr i8, ptr %args, i32 (\d+)", ll)
    assert slots == ["8", "16"], ll


def test_calling_a_cross_module_is_a_clear_error():
    mod = fma_kernel(AARCH64)
    a = np.zeros(N, np.float32)
    with pytest.raises(EmberError, match="cannot run on this machine: -mtriple="):
        mod(a, a, np.zeros_like(a))
    with pytest.raises(EmberError, match="save it with save"):
        mod["fma"]


def missing_host_feature() -> str:
    """A feature LLVM knows for this host's architecture and the host lacks."""
    features = llvm.get_host_cpu_features()
    preferred = ("avx512fp16", "amx-tile", "avx512f", "avx2", "sve2", "sme", "v")
    for name in (*preferred, *sorted(features)):
        if features.get(name) is False:
            return name
    pytest.skip("this host has every feature LLVM knows for it")


def test_a_feature_the_host_lacks_saves_objects_but_refuses_to_run(tmp_path):
    feature = missing_host_feature()
    host = llvm.get_host_cpu_name()
    assert Target(f"llvm -mattr=+{feature}").not_host_reason == (
        f"this {host} lacks +{feature}"
    )
    assert Target(f"llvm -mattr=+{feature},-{feature}").is_host  # the last one wins
    mod = fma_kernel(f"llvm -mattr=+{feature}", parallel=False)
    assert not mod.target.is_host
    assert mod.target.triple == llvm.get_process_triple()
    mod.save(tmp_path / "k.o")
    assert (tmp_path / "k.o").read_bytes()[:4] == b"\x7fELF"
    a = np.zeros(N, np.float32)
    with pytest.raises(EmberError, match=rf"lacks \+{re.escape(feature)}"):
        mod(a, a, np.zeros_like(a))


def test_host_cpu_named_generic_still_gets_the_host_features(monkeypatch):
    """Some hosts (new CPUs, VMs) make LLVM answer "generic": the target is
    still the host, with every feature detected on it."""
    monkeypatch.setattr(llvm, "get_host_cpu_name", lambda: "generic")
    target = Target("llvm")
    assert target.cpu == "generic" and target.is_host
    assert target.features == llvm.get_host_cpu_features().flatten() != ""
    assert Target("llvm -mcpu=generic").is_host
    mod = fma_kernel(target, parallel=False)
    a = np.linspace(0, 1, N, dtype=np.float32)
    b = np.linspace(1, 2, N, dtype=np.float32)
    c = np.empty_like(a)
    mod(a, b, c)
    np.testing.assert_allclose(c, a * b + a, rtol=1e-6)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("llvm -mtriple=z80-unknown-none", "-mtriple=z80-unknown-none is not a target"),
        ("llvm -mtriple=avr32-linux", "-mtriple=avr32-linux is not a target"),
        (
            "llvm -mtriple=aarch64-linux-gnu -mcpu=skylake",
            "-mcpu=skylake is not a CPU LLVM knows for aarch64-linux-gnu",
        ),
        (
            "llvm -mtriple=wasm32-unknown-unknown -mcpu=neoverse-v2",
            "-mcpu=neoverse-v2 is not a CPU LLVM knows for wasm32",
        ),
        (
            "llvm -mtriple=riscv64-linux-gnu -mattr=+v,+avx2",
            "-mattr +avx2 is not a feature LLVM knows for riscv64-linux-gnu",
        ),
        (
            "llvm -mtriple=aarch64-linux-gnu -mattr=sve",
            "-mattr entries are +feature or -feature, got 'sve'",
        ),
        ("llvm -mtriple=aarch64-linux-gnu -mattr=+", "got '+'"),
        ("llvm -mtriple=aarch64-linux-gnu -mattr=+sve,,+sve2", "got ''"),
        ("llvm -mtriple=aarch64-linux-gnu -mattr=+s ve", "expected -option=value"),
        (
            "llvm -mtriple=riscv64-linux-gnu -mabi=lp64q",
            "-mabi=lp64q cannot be used: 'lp64q' is not a recognized ABI",
        ),
        (
            "llvm -mtriple=riscv64-linux-gnu -mattr=-d -mabi=lp64d",
            "-mabi=lp64d cannot be used: Hard-float 'd' ABI can't be used",
        ),
        (
            "llvm -mtriple=aarch64-linux-gnu -mabi=lp64",
            "-mabi=lp64 is not an ABI of aarch64 (expected aapcs,",
        ),
        ("llvm -mabi=sysv", "-mabi=sysv is not an ABI of x86_64"),
        ("llvm -mtriple=wasm32 -mabi=x", "is not an ABI of wasm32"),
        ("llvm -mtriple", "expected -option=value, got '-mtriple'"),
    ],
)
def test_bad_cross_targets_name_the_bad_part(spec, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        Target(spec)


def test_good_abis_are_accepted():
    assert Target("llvm -mtriple=riscv64-linux-gnu -mabi=lp64d").mabi == "lp64d"
    assert Target("llvm -mtriple=aarch64-linux-gnu -mabi=aapcs").mabi == "aapcs"


def test_target_dict_form_for_a_cross_target():
    t = Target({"mtriple": "riscv64-linux-gnu", "mattr": ["+v"], "mabi": "lp64d"})
    assert str(t) == "llvm -mtriple=riscv64-linux-gnu -mattr=+v -mabi=lp64d"
    assert t == Target(str(t)) and not t.is_host


def test_target_probe_does_not_run_for_plain_cross_triples(monkeypatch):
    def refuse(*args):
        raise AssertionError(f"validated {args} in a subprocess")

    monkeypatch.setattr(target_module, "_llvm_rejects", refuse)
    for triple in ("aarch64-linux-gnu", "riscv64-linux-gnu", "wasm32-unknown-unknown"):
        assert not Target(f"llvm -mtriple={triple}").is_host


# The wasm32 kernel, run: wasm-ld links the object into a module exporting the
# packed function; node builds DLTensors (wasm32 layout: 4-byte pointers, 40
# bytes) in its memory and calls it through the packed ABI.
RUN_WASM = r"""
const fs = require("fs");
const [path, name, spec, countText] = process.argv.slice(2);
const tensors = JSON.parse(spec);
const inst = new WebAssembly.Instance(new WebAssembly.Module(fs.readFileSync(path)), {});
const mem = inst.exports.memory;
let top = (inst.exports.__heap_base.value + 63) & ~63;
function alloc(n) {
  const at = top;
  top = (top + n + 63) & ~63;
  if (top > mem.buffer.byteLength) mem.grow(Math.ceil((top - mem.buffer.byteLength) / 65536));
  return at;
}
const view = () => new DataView(mem.buffer);
const handles = tensors.map((t) => {
  const data = alloc(4 * t.data.length), shape = alloc(8 * t.shape.length), dl = alloc(40);
  new Float32Array(mem.buffer, data, t.data.length).set(t.data);
  const v = view();
  t.shape.forEach((e, k) => v.setBigInt64(shape + 8 * k, BigInt(e), true));
  v.setUint32(dl, data, true);                           // data
  v.setInt32(dl + 4, t.device, true);                    // device_type
  v.setInt32(dl + 8, 0, true);                           // device_id
  v.setInt32(dl + 12, t.shape.length, true);             // ndim
  v.setUint8(dl + 16, 2); v.setUint8(dl + 17, 32); v.setUint16(dl + 18, 1, true);
  v.setUint32(dl + 20, shape, true);                     // shape
  v.setUint32(dl + 24, 0, true);                         // strides: compact
  v.setBigUint64(dl + 32, 0n, true);                     // byte_offset
  return { dl, data, count: t.data.length };
});
const args = alloc(8 * handles.length), codes = alloc(4 * handles.length);
const ret = alloc(8), retCode = alloc(4);
handles.forEach((h, i) => {
  view().setBigUint64(args + 8 * i, BigInt(h.dl), true);  // EmberValue: 8 bytes
  view().setInt32(codes + 4 * i, 7, true);                // kDLTensorHandle
});
const rc = inst.exports[name](args, codes, Number(countText), ret, retCode);
let message = null;
if (rc !== 0) {
  const bytes = new Uint8Array(mem.buffer, view().getUint32(ret, true));
  message = Buffer.from(bytes.subarray(0, bytes.indexOf(0))).toString();
}
console.log(JSON.stringify({
  rc, message,
  out: handles.map((h) => Array.from(new Float32Array(mem.buffer, h.data, h.count))),
}));
"""


@pytest.fixture
def run_wasm(tmp_path):
    wasm_ld, node = shutil.which("wasm-ld"), shutil.which("node")
    if not (wasm_ld and node):
        pytest.skip("running wasm32 code needs wasm-ld (lld) and node")
    driver = tmp_path / "run.js"
    driver.write_text(RUN_WASM)

    def run(mod, name, tensors, count=None):
        obj, wasm = tmp_path / f"{name}.o", tmp_path / f"{name}.wasm"
        mod.save(obj)
        link = [wasm_ld, "--no-entry", f"--export={name}", "--export=__heap_base"]
        subprocess.run([*link, "-o", wasm, obj], check=True)
        spec = json.dumps(
            [
                {"shape": list(t.shape), "data": t.ravel().tolist(), "device": dev}
                for t, dev in tensors
            ]
        )
        count = len(tensors) if count is None else count
        done = subprocess.run(
            [node, driver, wasm, name, spec, str(count)],
            capture_output=True,
            text=True,
            check=True,
        )
        return json.loads(done.stdout)

    return run


def test_wasm32_kernel_runs_and_matches_numpy(run_wasm):
    mod = fma_kernel(WASM32)  # vectorized, and parallel: serial on wasm32
    rng = np.random.default_rng(0)
    a, b = rng.random(N, np.float32), rng.random(N, np.float32)
    c = np.zeros(N, np.float32)
    result = run_wasm(mod, "fma", [(a, 1), (b, 1), (c, 1)])
    assert (result["rc"], result["message"]) == (0, None)
    np.testing.assert_allclose(result["out"][2], a * b + a, rtol=1e-6)
    np.testing.assert_array_equal(result["out"][0], a)  # inputs untouched


def test_wasm32_kernel_checks_its_arguments(run_wasm):
    mod = fma_kernel(WASM32)
    x = np.zeros(N, np.float32)
    result = run_wasm(mod, "fma", [(x, 1), (x, 1), (x, 1)], count=2)
    assert result == {
        "rc": -1,
        "message": "fma: expected 3 arguments (A, B, C)",
        "out": result["out"],
    }
    result = run_wasm(mod, "fma", [(x, 1), (x, 2), (x.copy(), 1)])
    assert result["rc"] == -3
    assert result["message"] == "fma: argument 1 (B): expected a CPU tensor"
