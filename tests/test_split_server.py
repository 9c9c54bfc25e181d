"""The split server against hostile clients, and the head and tail of a forward through it.

The server runs in a thread of this process on a loopback port; every hostile client is
refused in one line (to the client and in the server's log) and a good client is served
after it, on the same server.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import threading

import pytest
import torch

from profiling.runner import analyse_cuts
from profiling.runner.split_run import run_head, run_tail
from profiling.runner.split_service import TailService, output_tensors, run_request
from profiling.split.client import SplitClient
from profiling.split.server import SplitServer
from profiling.split.wire import MAGIC, PREFIX, WireError, frame, receive_frame

from test_split import Toy, X

TOKEN = "s3cret"
IDENTITY = {"config": "c" * 64, "weights": "w" * 64}
REFERENCE = Toy()(X.clone())  # [3, -6, 9, 12]


@pytest.fixture(scope="module")
def server():
    """A server of the toy model on a free loopback port: ``(port, log lines)``."""
    log: list[str] = []
    ready = threading.Event()
    bound = {}
    service = TailService(Toy(), (torch.zeros_like(X),), poison=True)
    split_server = SplitServer(service, IDENTITY, token=TOKEN, max_body=1 << 20, timeout=2.0,
                               log=log.append)
    loop = asyncio.new_event_loop()

    def started(host, port):
        bound["port"] = port
        ready.set()

    task = loop.create_task(split_server.serve("127.0.0.1", 0, started))

    def run():
        try:
            loop.run_until_complete(task)
        except asyncio.CancelledError:
            pass

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(10)
    yield bound["port"], log
    loop.call_soon_threadsafe(task.cancel)
    thread.join(5)


def _cuts():
    return {cut.name: cut for cut in analyse_cuts(Toy(), (X,), codecs=())}


def _good_run(port: int, cut_name: str = "widen", encoding: str = "zlib") -> torch.Tensor:
    cut = _cuts()[cut_name]
    client = SplitClient(SplitClient.connect("127.0.0.1", port), IDENTITY, TOKEN)
    try:
        head = run_head(Toy(), (X.clone(),), cut.position, cut.tensors)
        header, body, _ = run_request(head, cut.tensors, cut.position, encoding, output=True)
        reply, reply_body, *_ = client.exchange(header, body)
        return output_tensors(reply, reply_body)[0]
    finally:
        client.close()


def _raw(port: int, data: bytes, close_write: bool = True) -> str:
    """Send ``data`` and return the server's one-line refusal."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(data)
        if close_write:
            connection.shutdown(socket.SHUT_WR)
        header, _ = receive_frame(connection)
    return header["error"]


def _hello(token=TOKEN, **identity) -> bytes:
    return b"".join(frame({"op": "hello", "token": token, **IDENTITY, **identity}))


@pytest.mark.parametrize("cut_name", ["input", "double", "widen", "index", "combine", "output"])
def test_every_cut_through_the_server_gives_the_unsplit_output(server, cut_name):
    assert torch.equal(_good_run(server[0], cut_name), REFERENCE)


def test_int8_zlib_is_close_but_lossy(server):
    out = _good_run(server[0], "index", "int8+zlib")
    # x = [1, -2, 3, 4] quantised over [-2, 4] in 255 steps: within half a step per element
    assert (out - REFERENCE).abs().max() <= 3 * 6 / 255 / 2 * 1.001 + 1e-6


@pytest.mark.parametrize("data, expected", [
    (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
     "not a stagezoo frame (starts b'GET ', expected b'SZ01')"),
    (PREFIX.pack(MAGIC, 10, 10_000_000_000),
     "body of 10,000,000,000 bytes announced; at most 1,048,576 accepted"),
    (PREFIX.pack(MAGIC, 100, 0) + b'{"op": "hel',
     "truncated frame: the connection closed 11 bytes into a part of 100"),
    (PREFIX.pack(MAGIC, 5, 0) + b"[1,2]", "the header is a JSON list, not an object"),
    (_hello(token="guess"), "wrong or missing token"),
    (_hello(token=None), "wrong or missing token"),
    (_hello(config="d" * 64), "the client's config hash dddddddddddd is not this server's "
                              "cccccccccccc: both sides must run the same model, overrides and "
                              "weights"),
    (b"".join(frame({"op": "run"})), "the first frame must be a hello, got op 'run'"),
])
def test_a_hostile_client_is_refused_in_one_line_and_the_server_goes_on(server, data, expected):
    port, log = server
    assert _raw(port, data) == expected
    assert log[-1].endswith(expected) and "\n" not in log[-1]
    assert torch.equal(_good_run(port), REFERENCE)  # still serving


def test_a_truncated_prefix_and_a_stalled_frame_are_refused(server):
    port, log = server
    with socket.create_connection(("127.0.0.1", port)) as connection:
        connection.sendall(MAGIC + b"\x00")
    for _ in range(100):
        if log and "truncated frame: the connection closed after 5 of the prefix's 16" in log[-1]:
            break
        threading.Event().wait(0.05)
    assert log[-1].endswith("truncated frame: the connection closed after 5 of the prefix's "
                            "16 bytes")
    # a frame that starts and never ends: refused after the server's 2 s timeout
    assert _raw(port, PREFIX.pack(MAGIC, 50, 0), close_write=False) == \
        "no complete frame within 2 s"
    assert torch.equal(_good_run(port), REFERENCE)


def test_a_bad_request_after_a_good_hello_is_answered_and_the_connection_stays(server):
    port, _ = server
    client = SplitClient(SplitClient.connect("127.0.0.1", port), IDENTITY, TOKEN)
    try:
        with pytest.raises(WireError, match="this server holds no tape of that hash; send it"):
            client.exchange({"op": "run", "position": 3, "tensors": [],
                             "tape": {"sha": "0" * 64, "size": 0, "raw": 1}})
        with pytest.raises(WireError, match=r"dtype 'float99' is not one of float64"):
            cut = _cuts()["widen"]
            head = run_head(Toy(), (X.clone(),), cut.position, cut.tensors)
            header, body, _ = run_request(head, cut.tensors, cut.position, "raw")
            header["tensors"][0]["dtype"] = "float99"
            client.exchange(header, body)
        assert client.round_trip_ms(3) > 0  # the same connection still answers
    finally:
        client.close()


def test_the_tail_never_recomputes_the_head():
    """Poisoned stand-ins (NaN) for everything the head computed: a value used without being
    sent would show; the tail's operators are only those after the cut."""
    cut = _cuts()["index"]  # position 5 of the toy's 10 operators
    head = run_head(Toy(), (X.clone(),), cut.position, cut.tensors)
    assert len(head.tape) == 5
    assert [name for name, _ in head.tape] == ["aten.mul.Tensor", "aten.cat.default",
                                               "aten.relu_.default", "aten.argmax.default",
                                               "aten.mul_.Tensor"]
    tail = run_tail(Toy(), (torch.full_like(X, float("nan")),), cut.position, cut.tensors,
                    head.pieces, head.tape, poison=True)
    assert torch.equal(tail.output, REFERENCE)
    # what crossed: x (16 B), z zeroed in place (32 B), i (8 B) = the analysis's 56 bytes
    assert sum(piece.numel() for piece in head.pieces) == 56


def test_the_frame_prefix_is_sixteen_bytes():
    assert PREFIX.size == 16 and struct.unpack(">4sIQ", PREFIX.pack(MAGIC, 2, 3)) == \
        (b"SZ01", 2, 3)
