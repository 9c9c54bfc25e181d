"""The shaped link of ``zoo.split --execute`` with a fake command runner: the ``tc`` commands
issued where the kernel has ``netem`` and where it has not (this VM's has not), and the label
each run's rows carry (the RTT added by netem, or the link's own RTT as measured). No root
needed: nothing is run."""

from __future__ import annotations

import argparse
import subprocess
from contextlib import ExitStack

import pytest

import profiling.split.link as link_module
import zoo.tools.split_execute as split_execute
from profiling.split.link import TBF_BURST_BYTES, Link

NO_NETEM = "Error: Specified qdisc kind is unknown."


def fake_runner(netem: bool, issued: list):
    """A stand-in for ``link._run``: records each command; ``netem`` qdiscs fail unless
    ``netem``, as on a kernel without ``sch_netem``."""
    def run(*command: str) -> subprocess.CompletedProcess:
        issued.append(" ".join(command))
        refused = "netem" in command and not netem
        return subprocess.CompletedProcess(command, 2 if refused else 0, "",
                                           NO_NETEM if refused else "")
    return run


def _tbf(rate: str) -> str:
    return f"tbf rate {rate} burst {TBF_BURST_BYTES} latency 400ms"


def test_with_netem_the_delay_is_the_root_and_tbf_its_child(monkeypatch):
    issued: list[str] = []
    monkeypatch.setattr(link_module, "_run", fake_runner(True, issued))
    link = Link("szf")
    assert link.shape(20, 20) is True
    assert issued == [command for space in ("szfh", "szfs") for command in (
        f"tc -n {space} qdisc del dev veth0 root",
        f"tc -n {space} qdisc add dev veth0 root handle 1: netem delay 10ms",
        f"tc -n {space} qdisc add dev veth0 parent 1:1 handle 10: {_tbf('20000000bit')}")]
    assert link.describe(20, 20) == "tbf 20 Mbit/s, netem 20 ms RTT"


def test_without_netem_tbf_alone_and_netem_is_not_tried_again(monkeypatch):
    issued: list[str] = []
    monkeypatch.setattr(link_module, "_run", fake_runner(False, issued))
    link = Link("szf")
    assert link.shape(20, 20) is False
    assert issued == [
        "tc -n szfh qdisc del dev veth0 root",
        "tc -n szfh qdisc add dev veth0 root handle 1: netem delay 10ms",
        f"tc -n szfh qdisc add dev veth0 root {_tbf('20000000bit')}",
        "tc -n szfs qdisc del dev veth0 root",  # the kernel said no once: not asked again
        f"tc -n szfs qdisc add dev veth0 root {_tbf('20000000bit')}"]
    assert link.describe(20, 20) == "tbf 20 Mbit/s, no netem here: RTT as measured"
    issued.clear()
    assert link.shape(200, 20) is False
    assert not any("netem" in command for command in issued)


def test_no_delay_asked_adds_no_netem_and_says_so(monkeypatch):
    issued: list[str] = []
    monkeypatch.setattr(link_module, "_run", fake_runner(True, issued))
    link = Link("szf")
    assert link.shape(200, 0) is False
    assert not any("netem" in command for command in issued)
    assert link.describe(200, 0) == "tbf 200 Mbit/s, no delay asked (--rtt 0): RTT as measured"


class _FakeLink(Link):
    """A link whose namespaces are never made; :meth:`shape` is the real one."""

    def open(self) -> "Link":
        return self

    def connect(self, port: int, timeout: float = 30.0):
        return None


class _FakeServer:
    def __init__(self, overrides, link) -> None:
        self.port, self.token = 5577, "t"

    def close(self) -> None:
        pass


class _FakeClient:
    """Measures a link as the shaped one would: the RTT netem adds, or the veth's own."""

    rtt_ms = 0.0

    def __init__(self, connection, identity, token) -> None:
        pass

    def round_trip_ms(self) -> float:
        return self.rtt_ms

    def throughput_mbit(self, size: int, rtt_ms=None) -> float:
        return 19.3

    def close(self) -> None:
        pass


@pytest.mark.parametrize("netem, rtt, labels", [
    (True, 20.0, ["tbf 20 Mbit/s, netem 20 ms RTT", "tbf 200 Mbit/s, netem 20 ms RTT"]),
    (False, 0.13, ["tbf 20 Mbit/s, no netem here: RTT as measured",
                   "tbf 200 Mbit/s, no netem here: RTT as measured"]),
])
def test_each_branch_labels_the_run_s_links(netem, rtt, labels, monkeypatch):
    """The labels the rows of executed.csv carry, and the RTT recorded beside them: netem's
    20 ms where it was added, else the link's own as measured."""
    issued: list[str] = []
    monkeypatch.setattr(link_module, "_run", fake_runner(netem, issued))
    monkeypatch.setattr(split_execute, "unshaped_reason", lambda: None)
    monkeypatch.setattr(split_execute, "Link", _FakeLink)
    monkeypatch.setattr(split_execute, "_Server", _FakeServer)
    monkeypatch.setattr(_FakeClient, "rtt_ms", rtt)
    monkeypatch.setattr(split_execute, "SplitClient", _FakeClient)
    args = argparse.Namespace(server=None, bandwidth=[20.0, 200.0], rtt=20.0)
    with ExitStack() as stack:
        links = [link for _, link in split_execute._links(stack, args, [], {})]
    assert [link["label"] for link in links] == labels
    assert [link["bandwidth_mbps"] for link in links] == [20.0, 200.0]
    assert all(link["shaped"] and link["rtt_ms"] == rtt for link in links)
    assert sum("netem" in command for command in issued) == (4 if netem else 1)
