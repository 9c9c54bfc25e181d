"""The head's side of an executed split: one blocking TCP connection to a split server."""

from __future__ import annotations

import socket
import statistics
import time
from typing import Mapping, Optional, Sequence

from .wire import WireError, receive_frame, send_frame

__all__ = ["SplitClient"]


class SplitClient:
    """A connection to a :class:`~profiling.split.server.SplitServer`, greeted.

    Args:
        connection: a connected socket (:meth:`connect`, or one opened in another network
            namespace, :func:`profiling.split.link.connect_in`).
        identity: the hashes naming the model (must equal the server's).
        token: the server's shared token, if it has one.
    """

    def __init__(self, connection: socket.socket, identity: Mapping[str, str],
                 token: Optional[str] = None) -> None:
        self.connection = connection
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server = self.exchange({"op": "hello", "token": token, **identity})[0]

    @staticmethod
    def connect(host: str, port: int, timeout: float = 30.0) -> socket.socket:
        """A socket connected to ``host:port``."""
        try:
            return socket.create_connection((host, port), timeout=timeout)
        except OSError as error:
            raise WireError(f"cannot reach a split server at {host}:{port} ({error})") from None

    def exchange(self, header: dict, body: Sequence[bytes] = ()
                 ) -> tuple[dict, bytearray, int, int, int]:  # noqa: D401
        """Send a frame and read the answer: ``(reply, body, sent bytes, first byte sent,
        answer read)``, the times in :func:`time.monotonic_ns`; an error answer raises."""
        started = time.monotonic_ns()
        sent = send_frame(self.connection, header, body)
        reply, reply_body = receive_frame(self.connection)
        done = time.monotonic_ns()
        if "error" in reply:
            raise WireError(f"the server refused: {reply['error']}")
        return reply, reply_body, sent, started, done

    def round_trip_ms(self, count: int = 7) -> float:
        """The median time of an empty ping's round trip (ms)."""
        times = []
        for _ in range(count):
            *_, started, done = self.exchange({"op": "ping"})
            times.append((done - started) / 1e6)
        return statistics.median(times)

    def throughput_mbit(self, size: int, rtt_ms: Optional[float] = None) -> float:
        """Mbit/s of one ``size``-byte ping: from its first byte sent to its last received on
        the server when the two clocks are one (the same machine), else, given the link's
        ``rtt_ms``, its round trip less that RTT."""
        reply, _, sent, started, done = self.exchange({"op": "ping"}, [bytes(size)])
        elapsed_ns = (reply["received_ns"][1] - started if rtt_ms is None
                      else done - started - rtt_ms * 1e6)
        return sent * 8 / max(elapsed_ns, 1) * 1e3

    def close(self) -> None:
        """Close the connection."""
        self.connection.close()
