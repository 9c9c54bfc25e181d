"""The server side of an executed split: asyncio streams, one frame type (:mod:`.wire`).

A connection starts with a ``hello`` frame carrying the shared token (when the server has
one) and the hashes that name the model (its config, its weights); a mismatch is refused,
naming which differs. Then ``ping`` frames (answered at once, their body discarded: the RTT
and the throughput of the link) and ``run`` frames, handed to the ``handler`` in a worker
thread, so that the event loop keeps answering other connections during a forward.

A frame that breaks the protocol (garbage, a truncated frame, a length over the limits, a
wrong token, another model) is refused in one line: an error frame to the peer when it can
still be written, the same line on the server's log, and that connection closed. A request
that the handler cannot serve (an error in the tail's forward) gets its error frame and the
connection stays open. Nothing a client sends stops the server.
"""

from __future__ import annotations

import asyncio
import hmac
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Mapping, Optional, Sequence

from .wire import DEFAULT_MAX_BODY_BYTES, WireError, frame, read_frame

__all__ = ["Handler", "SplitServer", "LOOPBACK_HOSTS", "one_line"]

#: What a handler does with a ``run`` frame: ``(header, body) -> (reply header, reply body)``.
Handler = Callable[[dict, bytes], tuple[dict, Sequence[bytes]]]
#: Hosts that only this machine reaches: a server bound elsewhere needs a token.
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def one_line(error: BaseException) -> str:
    """An exception as one line: its type and the first line of its message."""
    text = (str(error).strip().splitlines() or [""])[0]
    return f"{type(error).__name__}: {text}"[:300] if not isinstance(error, WireError) \
        else text[:300]


class SplitServer:
    """Serves ``run`` requests with ``handler`` to clients that say the right ``identity``.

    Args:
        handler: runs one request (the tail of a forward).
        identity: the hashes a client's hello must match (``{"config": ..., "weights": ...}``).
        token: the shared secret a hello must carry; ``None`` for none (loopback only).
        max_body: the largest frame body accepted, in bytes.
        timeout: seconds within which a frame, once started, must arrive whole.
        log: where the one-line refusals and failures go (stderr by default).
    """

    def __init__(self, handler: Handler, identity: Mapping[str, str], *,
                 token: Optional[str] = None, max_body: int = DEFAULT_MAX_BODY_BYTES,
                 timeout: float = 60.0, log: Callable[[str], None] = None) -> None:
        self.handler, self.identity, self.token = handler, dict(identity), token
        self.max_body, self.timeout = max_body, timeout
        self.log = log or (lambda line: print(line, file=sys.stderr, flush=True))
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tail")
        self.served = 0

    def check_hello(self, header: dict) -> None:
        """Refuse a hello with a wrong token or another model (:class:`WireError`)."""
        if header.get("op") != "hello":
            raise WireError(f"the first frame must be a hello, got op {header.get('op')!r}"[:120])
        if self.token is not None:
            given = header.get("token")
            if not isinstance(given, str) or not hmac.compare_digest(given.encode(),
                                                                     self.token.encode()):
                raise WireError("wrong or missing token")
        for key, mine in self.identity.items():
            theirs = header.get(key)
            if theirs != mine:
                raise WireError(f"the client's {key} hash {str(theirs)[:12]} is not this "
                                f"server's {mine[:12]}: both sides must run the same model, "
                                f"overrides and weights")

    async def _reply(self, writer: asyncio.StreamWriter, header: dict,
                     body: Sequence[bytes] = ()) -> None:
        header = {**header, "sent_ns": time.monotonic_ns()}
        writer.writelines(frame(header, body))
        await writer.drain()

    async def _serve_frames(self, reader: asyncio.StreamReader,
                            writer: asyncio.StreamWriter) -> None:
        greeted = False
        loop = asyncio.get_running_loop()
        while True:
            got = await read_frame(reader, self.max_body, self.timeout)
            if got is None:
                return
            header, body, first, last = got
            received = {"received_ns": [first, last], "body_bytes": len(body)}
            if not greeted:
                self.check_hello(header)
                greeted = True
                await self._reply(writer, {"op": "hello", **self.identity, **received})
            elif header.get("op") == "ping":
                await self._reply(writer, {"op": "pong", **received})
            elif header.get("op") == "run":
                try:
                    reply, reply_body = await loop.run_in_executor(self.pool, self.handler,
                                                                   header, body)
                except Exception as error:  # the request failed, not the server
                    self.log(f"request failed: {one_line(error)}")
                    await self._reply(writer, {"error": one_line(error), **received})
                    continue
                self.served += 1
                await self._reply(writer, {**reply, **received}, reply_body)
            else:
                raise WireError(f"unknown op {str(header.get('op'))[:40]!r}; expected hello, "
                                f"ping or run")

    async def connection(self, reader: asyncio.StreamReader,
                         writer: asyncio.StreamWriter) -> None:
        """One client, frame after frame, until it closes or breaks the protocol."""
        peer = writer.get_extra_info("peername")
        try:
            await self._serve_frames(reader, writer)
        except WireError as error:
            self.log(f"refused {peer}: {one_line(error)}")
            try:
                await self._reply(writer, {"error": one_line(error)})
            except (ConnectionError, OSError):
                pass
        except (ConnectionError, OSError) as error:
            self.log(f"connection {peer} lost: {one_line(error)}")
        except Exception as error:  # a fault of the server's own: this connection only
            self.log(f"connection {peer} ended by {one_line(error)}")
        finally:
            writer.close()

    async def serve(self, host: str, port: int,
                    ready: Callable[[str, int], None] = lambda host, port: None) -> None:
        """Serve on ``host:port`` until cancelled; ``ready(host, port)`` once listening (the
        port the system chose for ``port=0``)."""
        server = await asyncio.start_server(self.connection, host, port)
        bound = server.sockets[0].getsockname()
        ready(bound[0], bound[1])
        async with server:
            await server.serve_forever()
