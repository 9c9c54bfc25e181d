"""A shaped link for an executed split: two network namespaces joined by a veth pair, with
``tc``'s token bucket filter (``tbf``) limiting each direction to a bandwidth, and ``netem``
adding delay where the kernel has it.

Needs root and iproute2 (``ip``, ``tc``); :func:`unshaped_reason` says in one line why a link
cannot be made here, and the caller then falls back to an unshaped loopback, saying so. The
head's socket is opened inside its namespace by a thread that enters it (``setns``), so the
calling process stays where it is; the server runs in the other namespace
(:meth:`Link.command`). Every namespace and link made is removed by :meth:`Link.close`.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import socket
import subprocess
import threading
from dataclasses import dataclass, field
from typing import Optional

from .wire import WireError

__all__ = ["Link", "unshaped_reason", "TBF_BURST_BYTES"]

_CLONE_NEWNET = 0x40000000
#: tbf's bucket: what may leave at line rate after an idle spell (a few MTU-sized packets).
TBF_BURST_BYTES = 16 * 1024


def _run(*command: str) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True, timeout=30)


def unshaped_reason() -> Optional[str]:
    """Why no shaped link can be made here (``None`` when one can)."""
    if os.geteuid() != 0:
        return "not root (network namespaces need it)"
    missing = [tool for tool in ("ip", "tc") if shutil.which(tool) is None]
    if missing:
        return f"{' and '.join(missing)} not installed (apt-get install iproute2)"
    probe = _run("ip", "netns", "list")
    if probe.returncode != 0:
        return f"no network namespaces here ({probe.stderr.strip()[:80]})"
    return None


@dataclass
class Link:
    """Two namespaces (``head``, ``server``) joined by a veth pair, addresses 10.231.0.1 and
    10.231.0.2 (private to the namespaces, so links of several runs never meet)."""

    name: str
    head_address: str = "10.231.0.1"
    server_address: str = "10.231.0.2"
    netem: Optional[bool] = None
    made: list[str] = field(default_factory=list)

    @property
    def head(self) -> str:
        return f"{self.name}h"

    @property
    def server(self) -> str:
        return f"{self.name}s"

    def _must(self, *command: str) -> None:
        done = _run(*command)
        if done.returncode != 0:
            raise WireError(f"{' '.join(command)} failed: {done.stderr.strip()[:160]}")

    def open(self) -> "Link":
        """Make the namespaces and the veth pair between them."""
        for space in (self.head, self.server):
            self._must("ip", "netns", "add", space)
            self.made.append(space)
        self._must("ip", "link", "add", "veth0", "netns", self.head, "type", "veth", "peer",
                   "name", "veth0", "netns", self.server)
        for space, address in ((self.head, self.head_address),
                               (self.server, self.server_address)):
            self._must("ip", "-n", space, "addr", "add", f"{address}/24", "dev", "veth0")
            self._must("ip", "-n", space, "link", "set", "veth0", "up")
            self._must("ip", "-n", space, "link", "set", "lo", "up")
        return self

    def shape(self, mbit: float, delay_ms: float) -> bool:
        """Limit both directions to ``mbit`` Mbit/s (tbf), with ``delay_ms / 2`` of netem delay
        each way where the kernel has netem; whether it had."""
        rate = f"{mbit * 1e6:.0f}bit"
        latency = "400ms"
        for space in (self.head, self.server):
            _run("tc", "-n", space, "qdisc", "del", "dev", "veth0", "root")
            tbf = ["tbf", "rate", rate, "burst", str(TBF_BURST_BYTES), "latency", latency]
            if self.netem is not False and delay_ms > 0:
                done = _run("tc", "-n", space, "qdisc", "add", "dev", "veth0", "root",
                            "handle", "1:", "netem", "delay", f"{delay_ms / 2:g}ms")
                self.netem = done.returncode == 0
                if self.netem:
                    self._must("tc", "-n", space, "qdisc", "add", "dev", "veth0",
                               "parent", "1:1", "handle", "10:", *tbf)
                    continue
            self._must("tc", "-n", space, "qdisc", "add", "dev", "veth0", "root", *tbf)
        return bool(self.netem)

    def describe(self, mbit: float, delay_ms: float) -> str:
        """The label of the link as :meth:`shape` left it: the RTT it adds with netem, or that
        the RTT is the link's own, as measured (no netem here, or no delay asked)."""
        if delay_ms > 0 and self.netem:
            return f"tbf {mbit:g} Mbit/s, netem {delay_ms:g} ms RTT"
        reason = "no netem here" if delay_ms > 0 else "no delay asked (--rtt 0)"
        return f"tbf {mbit:g} Mbit/s, {reason}: RTT as measured"

    def command(self, *argv: str) -> list[str]:
        """``argv`` run inside the server's namespace."""
        return ["ip", "netns", "exec", self.server, *argv]

    def connect(self, port: int, timeout: float = 30.0) -> socket.socket:
        """A socket from the head's namespace to the server's ``port``."""
        result: dict[str, object] = {}

        def enter_and_connect() -> None:
            libc = ctypes.CDLL(None, use_errno=True)
            descriptor = os.open(f"/var/run/netns/{self.head}", os.O_RDONLY)
            try:
                if libc.setns(descriptor, _CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), "setns failed")
                result["socket"] = socket.create_connection((self.server_address, port),
                                                            timeout=timeout)
            except OSError as error:
                result["error"] = error
            finally:
                os.close(descriptor)

        thread = threading.Thread(target=enter_and_connect)
        thread.start()
        thread.join()
        if "error" in result:
            raise WireError(f"cannot reach the server in namespace {self.server} "
                            f"({result['error']})")
        return result["socket"]

    def close(self) -> None:
        """Remove the namespaces (their veth ends go with them)."""
        for space in reversed(self.made):
            _run("ip", "netns", "del", space)
        self.made.clear()

    def __enter__(self) -> "Link":
        return self.open()

    def __exit__(self, *exc_info) -> None:
        self.close()
