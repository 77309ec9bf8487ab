"""The RPC tutorial (examples/rpc_tutorial.py), the server's command line as
docs/rpc.md describes it, and the security claims docs/rpc.md makes: the key
stays off command lines and off the wire, a captured handshake cannot be
replayed, binding beyond loopback warns and without a key is refused, short
keys are refused, a key on the command line warns."""

import hmac
import os
import platform
import re
import runpy
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from rpc_util import rpc_server

import ember.rpc
from ember.runtime import cc
from ember.runtime.rpc import protocol as p
from ember.runtime.rpc.server import Server

ROOT = Path(__file__).resolve().parent.parent
TUTORIAL = ROOT / "examples" / "rpc_tutorial.py"
KEY = "0123456789abcdef" * 4
WARNING = "reachable from other machines: anyone who can connect"


def run_tutorial(*args: str, env: dict | None = None) -> str:
    result = subprocess.run(
        [sys.executable, str(TUTORIAL), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def timing_ms(out: str, label: str) -> float:
    """The best time of a "LABEL: best X ms, median Y ms per call" line."""
    match = re.search(
        rf"^{re.escape(label)}: best ([\d.]+) ms, median ([\d.]+) ms", out, re.M
    )
    assert match, f"no {label!r} line in\n{out}"
    best, median = float(match[1]), float(match[2])
    assert 0 < best <= median, out
    return best


def server_command() -> list[str]:
    here = shutil.which("ember-rpc-server", path=str(Path(sys.executable).parent))
    found = here or shutil.which("ember-rpc-server")
    assert found, "ember-rpc-server is not installed beside this interpreter or on PATH"
    return [found]


def test_tutorial_runs_the_whole_session_on_a_server_it_starts():
    out = run_tutorial("--show-log")
    assert "random key in $EMBER_RPC_KEY" in out
    assert "cross-compiled for 'llvm -mtriple=aarch64-linux-gnu -mattr=+neon'" in out
    assert re.search(
        r"matmul_aarch64\.tar, \d+ bytes, .*\(triple aarch64-linux-gnu, objects ", out
    )
    assert (
        "a client with a wrong key: refused (refused: the server requires a key" in out
    )
    assert re.search(
        r"^remote run: matches numpy \(max \|error\| [\d.e+-]+\)$", out, re.M
    )
    remote = timing_ms(out, "time_evaluator on the server")
    local = timing_ms(out, "time_evaluator here, same library")
    assert remote < 1000 and local < 1000
    round_trip = re.search(
        r"^one call made from here, network included: ([\d.]+) ms$", out, re.M
    )
    assert round_trip and float(round_trip[1]) > 0, out
    here = platform.machine()
    assert f"chosen for a {here} server: matmul_{here}.so" in out
    if here != "aarch64":
        assert (
            "the aarch64 .tar on this server: refused (IncompatibleLibraryError: "
            f"matmul_aarch64.tar was built for aarch64 (aarch64-linux-gnu), this machine is {here})"
        ) in out
    assert f"downloaded matmul_{here}.so: identical" in out
    assert f"after removing matmul_aarch64.tar: matmul_{here}.so\n" in out
    assert "session closed: its workspace on the server is gone" in out
    assert "server stopped" in out
    log = out.split("server log:", 1)[1]
    assert "refused: the client sent a wrong key" in log
    assert f"uploaded matmul_{here}.so" in log and f"loaded matmul_{here}.so" in log
    assert " ERROR " not in log and "died of" not in log, log
    # the client sees the file's name, never the server's workspace path
    assert "/files/" not in out.split("server log:", 1)[0]


def test_tutorial_uses_a_running_server_with_the_key_from_the_environment():
    with rpc_server(key=KEY) as server:
        out = run_tutorial(
            "--port", str(server.port), "--size", "96",
            env={**os.environ, "EMBER_RPC_KEY": KEY},
        )  # fmt: skip
        log = server.log()
    assert f"server: 127.0.0.1:{server.port} (already running)" in out
    assert "matmul 96x96x96" in out
    assert "remote run: matches numpy" in out
    assert "session closed: the server removes its workspace" in out
    assert "wrong key" not in out  # only tried on a server it started itself
    assert "session started" in log and "uploaded matmul_aarch64.tar" in log


def test_tutorial_reads_the_key_from_the_file_the_server_reads(tmp_path):
    path = tmp_path / "key"
    path.write_text(KEY + "\n")
    path.chmod(0o600)
    with rpc_server("--key-file", str(path)) as server:
        env = {k: v for k, v in os.environ.items() if k != "EMBER_RPC_KEY"}
        out = run_tutorial(
            "--port", str(server.port), "--size", "32", "--key-file", str(path),
            env=env,
        )  # fmt: skip
        assert " WARNING " not in server.log(), server.log()
    assert "remote run: matches numpy" in out


def test_tutorial_without_the_key_says_so_without_a_traceback():
    with rpc_server(key=KEY) as server:
        env = {k: v for k, v in os.environ.items() if k != "EMBER_RPC_KEY"}
        result = subprocess.run(
            [sys.executable, str(TUTORIAL), "--port", str(server.port), "--size", "32"],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert (
        f"rpc_tutorial: RPCError: the server at 127.0.0.1:{server.port} requires a key"
        in result.stderr
    )


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")
def test_tutorial_server_gets_its_key_from_the_environment_not_the_command_line(
    tmp_path,
):
    tutorial = runpy.run_path(str(TUTORIAL), run_name="not_main")
    server, port, key = tutorial["start_server"](tmp_path)
    try:
        cmdline = Path(f"/proc/{server.pid}/cmdline").read_bytes()
        environ = Path(f"/proc/{server.pid}/environ").read_bytes()
        assert b"ember-rpc-server" in cmdline or b"ember.rpc.server" in cmdline
        assert key.encode() not in cmdline
        assert b"EMBER_RPC_KEY=" + key.encode() in environ.split(b"\0")
        assert len(key) == 64  # 256 random bits
        with pytest.raises(ember.rpc.RPCError, match="requires a key"):
            ember.rpc.connect("127.0.0.1", port)
        with ember.rpc.connect("127.0.0.1", port, key=key) as remote:
            assert remote.listdir() == []
    finally:
        tutorial["stop_server"](server)
    assert server.returncode is not None


def test_server_help_names_the_key_and_warns_that_it_runs_uploaded_code():
    result = subprocess.run(
        [*server_command(), "--help"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert "--key" in text and "$EMBER_RPC_KEY" in text
    assert "The server runs the code it is sent" in text
    assert "expose it only to people you would give a shell" in text
    assert "docs/rpc.md" in text


def test_docs_table_lists_exactly_the_server_options():
    help_text = subprocess.run(
        [sys.executable, "-m", "ember.rpc.server", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    offered = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]+)", help_text)) - {"--help"}
    docs = (ROOT / "docs" / "rpc.md").read_text()
    table = docs.split("## Server options and limits", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `(--[a-z-]+)`", table, re.M))
    documented |= set(re.findall(r"^\| `-[a-z]`, `(--[a-z-]+)`", table, re.M))
    assert documented == offered


NO_KEY = "WARNING no key: any client that can connect is served"


def run_server(*args: str, key: str | None = None) -> subprocess.CompletedProcess:
    """The server's command line, for one that must refuse to start."""
    env = {k: v for k, v in os.environ.items() if k != "EMBER_RPC_KEY"}
    if key is not None:
        env["EMBER_RPC_KEY"] = key
    return subprocess.run(
        [sys.executable, "-m", "ember.rpc.server", "--port", "0", *args],
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
    )


@pytest.mark.parametrize("key", [None, KEY], ids=["no-key", "key"])
def test_binding_beyond_loopback_warns_in_the_log(key):
    flags = ("--insecure-no-key",) if key is None else ()
    with rpc_server("--host", "0.0.0.0", *flags, key=key) as server:
        with ember.rpc.connect("127.0.0.1", server.port, key=key) as remote:
            assert remote.info["key_required"] is (key is not None)
        log = server.log()
    warning = next(line for line in log.splitlines() if WARNING in line)
    assert "WARNING listening on 0.0.0.0, " in warning
    who = (
        "anyone who can connect and knows the key"
        if key
        else "anyone who can connect can"
    )
    assert who in warning and "can run code here as this user" in warning
    assert (NO_KEY in log) is (key is None), log


def test_binding_beyond_loopback_without_a_key_is_refused():
    done = run_server("--host", "0.0.0.0")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stdout == ""  # it never listened
    assert (
        "ember-rpc-server: error: refusing to listen on 0.0.0.0 without a key: anyone "
        "who can connect could run code here as this user"
    ) in done.stderr
    assert "--insecure-no-key" in done.stderr
    with pytest.raises(ValueError, match="insecure_no_key=True"):
        Server("0.0.0.0", 0)
    with pytest.raises(ValueError, match="refusing to listen on \\* without a key"):
        Server("", 0)


def test_loopback_without_a_key_serves_and_warns_that_it_has_none():
    with rpc_server() as server:
        with ember.rpc.connect("127.0.0.1", server.port) as remote:
            assert remote.info["key_required"] is False
        log = server.log()
    assert NO_KEY in log and " WARNING " in log
    assert [line for line in log.splitlines() if " WARNING " in line] == [
        line for line in log.splitlines() if NO_KEY in line
    ]
    with rpc_server(key=KEY) as server:
        with ember.rpc.connect("127.0.0.1", server.port, key=KEY):
            pass
        assert " WARNING " not in server.log(), server.log()


def test_short_keys_are_refused_naming_the_rule(tmp_path):
    short = "0123456789abcde"  # 15 bytes
    done = run_server(key=short)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "error: the key is 15 bytes; a key must be at least 16 bytes" in done.stderr
    assert "secrets.token_hex(32)" in done.stderr
    with pytest.raises(ValueError, match="a key must be at least 16 bytes"):
        Server("127.0.0.1", 0, key=short)
    with pytest.raises(ValueError, match="the key is 15 bytes"):
        Server("127.0.0.1", 0, key="é" * 7 + "x")  # 8 characters, 15 bytes
    path = tmp_path / "short"
    path.write_text(short + "\n")
    path.chmod(0o600)
    assert "the key is 15 bytes" in run_server("--key-file", str(path)).stderr
    # 16 bytes is enough.
    with rpc_server(key=short + "f") as server:
        with ember.rpc.connect("127.0.0.1", server.port, key=short + "f") as remote:
            assert remote.listdir() == []


def test_key_file_serves_and_key_on_the_command_line_warns(tmp_path):
    path = tmp_path / "key"
    path.write_text(KEY + "\n")
    path.chmod(0o600)
    with rpc_server("--key-file", str(path)) as server:
        with pytest.raises(ember.rpc.RPCError, match="requires a key"):
            ember.rpc.connect("127.0.0.1", server.port)
        with ember.rpc.connect("127.0.0.1", server.port, key=KEY) as remote:
            assert remote.listdir() == []
        assert " WARNING " not in server.log(), server.log()
    with rpc_server("--key", KEY) as server:
        with ember.rpc.connect("127.0.0.1", server.port, key=KEY):
            pass
        log = server.log()
    assert (
        "WARNING --key puts the key on the command line, where every user of this "
        "machine can read it (ps); use $EMBER_RPC_KEY or --key-file"
    ) in log
    path.chmod(0o644)
    with rpc_server("--key-file", str(path)) as server:
        log = server.log()
    assert f"WARNING {path} can be read by other users (mode 644)" in log
    done = run_server("--key-file", str(tmp_path / "missing"))
    assert done.returncode == 2 and "error: cannot read --key-file" in done.stderr
    done = run_server("--key-file", str(path), "--key", KEY)
    assert done.returncode == 2 and "not allowed with argument" in done.stderr


def _read_frame(conn: socket.socket) -> bytes:
    """One whole frame, as raw bytes."""
    head = b""
    while len(head) < p.HEADER.size:
        head += conn.recv(p.HEADER.size - len(head))
    length = p.HEADER.unpack(head)[4]
    payload = b""
    while len(payload) < length:
        payload += conn.recv(length - len(payload))
    return head + payload


def test_the_key_never_crosses_the_wire_and_a_captured_digest_cannot_be_replayed():
    """A fake server records what a client sends in its handshake; the record
    holds HMAC(key, nonce) and not the key, and a real server refuses it."""
    nonce = os.urandom(32)
    captured: list[bytes] = []
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(30)

    def fake_server():
        conn, _ = listener.accept()
        with conn:
            conn.settimeout(30)
            hello = {"version": p.VERSION, "nonce": nonce.hex(), "key_required": True}
            p.send(conn, p.MsgType.HELLO, {**hello, "max_frame_bytes": 1 << 20})
            captured.append(_read_frame(conn))
            p.send(conn, p.MsgType.ERROR, {"error": "RPCError", "message": "recorded"})

    thread = threading.Thread(target=fake_server)
    thread.start()
    try:
        with pytest.raises(ember.rpc.RPCError, match="recorded"):
            ember.rpc.connect("127.0.0.1", listener.getsockname()[1], key=KEY)
    finally:
        thread.join(30)
        listener.close()
    (frame,) = captured
    assert KEY.encode() not in frame
    assert p.HEADER.unpack(frame[: p.HEADER.size])[2] == p.MsgType.AUTH
    digest = p.split_payload(memoryview(frame[p.HEADER.size :]))[0]["digest"]
    assert hmac.compare_digest(digest, p.expected_digest(KEY, nonce))

    with rpc_server(key=KEY) as server:
        with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
            hello = p.receive(sock, 1 << 20)
            assert bytes.fromhex(hello.header["nonce"]) != nonce
            p.send(sock, p.MsgType.AUTH, {"digest": digest})
            reply = p.receive(sock, 1 << 20)
            assert reply.type == p.MsgType.ERROR
            assert "wrong key" in reply.header["message"]
            assert sock.recv(1) == b""  # and the server hung up
        assert "refused: the client sent a wrong key" in server.log()


def test_a_non_ascii_digest_is_refused_with_an_error_reply():
    with rpc_server(key=KEY) as server:
        with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
            p.receive(sock, 1 << 20)
            p.send(sock, p.MsgType.AUTH, {"digest": "\u00e9" * 64})
            reply = p.receive(sock, 1 << 20)
        assert reply.type == p.MsgType.ERROR
        assert "wrong key" in reply.header["message"]


def test_docs_python_blocks_compile_and_the_cross_compile_block_runs(
    tmp_path, monkeypatch
):
    docs = (ROOT / "docs" / "rpc.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", docs, re.S)
    assert len(blocks) >= 5
    for block in blocks:
        compile(block, "docs/rpc.md", "exec")
    monkeypatch.chdir(tmp_path)
    exec(compile(blocks[0], "docs/rpc.md", "exec"), {})
    manifest = cc.read_manifest(str(tmp_path / "matmul.tar"))
    assert manifest["triple"] == "aarch64-linux-gnu"
