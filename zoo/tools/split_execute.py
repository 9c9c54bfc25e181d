"""``zoo.split --execute``: every cut run for real, the head here and the tail in a server.

For each cut (the input, every stage call, the ``--depth`` module cuts, the output), each
encoding (raw and every ``--codec``) and each link, the head runs the forward up to the cut
in this process, sends what crosses it to a ``zoo.serve`` process, which runs the rest
(:mod:`profiling.runner.split_run`), ``--repeats`` times after one unmeasured run that also
brings the output back to compare it with the unsplit forward's. The links:

* shaped (root, iproute2): the server in a network namespace of its own, the head's socket in
  another, a veth pair between them, ``tbf`` at each ``--bandwidth`` both ways, and ``netem``
  delay of ``--rtt`` where the kernel has it (else the link's own RTT, measured and said);
* ``--server HOST:PORT``: a server started elsewhere (``stagezoo serve``), the link as it is;
* otherwise unshaped loopback, said in one line: never an unshaped result labelled shaped.

The rows and the estimates beside them are :func:`profiling.split.executed.executed_row`'s.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import tempfile
from contextlib import ExitStack
from typing import Any, Optional, Sequence

import pandas as pd
import torch

from profiling.runner import output_tensors, run_head, run_request
from profiling.split import (Link, SplitClient, best_measured_and_estimated, executed_row,
                             unshaped_reason)

from ..options import ConfigError
from .serve import model_identity
from .split_arguments import parse_server

__all__ = ["execute", "executed_cuts", "output_difference"]

#: Bytes of the ping that measures a link's throughput.
_PROBE_BYTES = 1 << 20


def executed_cuts(analysis: Any, depth: int) -> list[Any]:
    """The cuts to execute: the input, every stage call, the module cuts when ``--depth`` was
    given, the output."""
    kinds = {"input", "stage", "output"} | ({"module"} if depth else set())
    return [cut for cut in analysis.cuts if cut.kind in kinds]


def output_difference(output: Sequence[torch.Tensor], reference: Sequence[torch.Tensor]
                      ) -> tuple[float, bool]:
    """The largest absolute difference of the tail's output from the unsplit forward's, and
    whether they are bit-exact."""
    if len(output) != len(reference) or any(a.shape != b.shape for a, b in
                                             zip(output, reference)):
        return float("inf"), False
    exact = all(torch.equal(a, b) for a, b in zip(output, reference))
    differences = [float((a.double() - b.double()).abs().max()) for a, b in
                   zip(output, reference) if a.numel() and not a.dtype == torch.bool]
    return max(differences, default=0.0), exact


class _Server:
    """A ``zoo.serve`` process for the same overrides, in ``link``'s namespace or on
    loopback; stopped on exit."""

    def __init__(self, overrides: Sequence[str], link: Optional[Link]) -> None:
        self.token = secrets.token_hex(16)
        host = link.server_address if link else "127.0.0.1"
        argv = [sys.executable, "-m", "zoo.serve", *overrides, "--host", host, "--port",
                "5577" if link else "0", "--token", self.token]
        self.log = tempfile.NamedTemporaryFile("w+", prefix="stagezoo_serve_", suffix=".log",
                                               delete=False)
        self.process = subprocess.Popen(link.command(*argv) if link else argv,
                                        stdout=subprocess.PIPE, stderr=self.log, text=True,
                                        env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.port = self._wait_for_port()

    def _wait_for_port(self) -> int:
        line = self.process.stdout.readline()  # "" when the server ended before listening
        if not line.startswith("serving "):
            self.log.flush()
            with open(self.log.name) as log:
                last = (log.read().strip().splitlines() or ["no output"])[-1]
            self.close(keep_log=True)
            raise ConfigError(f"the split server did not start: {last} (log {self.log.name})")
        return int(line.rsplit(":", 1)[1])

    def close(self, keep_log: bool = False) -> None:
        """Stop the server; its log is removed unless it failed to start."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()
        if not keep_log:
            os.unlink(self.log.name)


def _repeat(client: SplitClient, model, inputs, attach, cut, encoding: str, *, output: bool,
            same_clock: bool, rtt_ms: float) -> tuple[dict, Any]:
    """One head, transfer and tail of ``cut``: its parts (ms), and the reply's outputs."""
    head = run_head(model, inputs, cut.position, cut.tensors, attach)
    header, body, encode_ms = run_request(head, cut.tensors, cut.position, encoding,
                                          send_tape=output, output=output)
    reply, reply_body, sent, started, done = client.exchange(header, body)
    first, last = reply["received_ns"]
    busy = (reply["sent_ns"] - last) / 1e6
    transfer = ((last - started) / 1e6 if same_clock
                else (done - started) / 1e6 - busy - rtt_ms / 2)
    parts = {"head_ms": head.head_ms, "encode_ms": encode_ms, "transfer_ms": transfer,
             "decode_ms": reply["decode_ms"], "skip_ms": reply["skip_ms"],
             "tail_ms": reply["tail_ms"],
             "end_to_end_ms": head.head_ms + encode_ms + (done - started) / 1e6,
             "sent_bytes": sent, "header_bytes": sent - sum(map(len, body))}
    return parts, (output_tensors(reply, reply_body) if output else None)


def _configuration(client, job, cut, encoding: str, link: dict, repeats: int) -> dict:
    """The row of one cut, encoding and link."""
    model, inputs, attach, reference = job
    _, outputs = _repeat(client, model, inputs, attach, cut, encoding, output=True,
                         same_clock=link["same_clock"], rtt_ms=link["rtt_ms"])
    difference, exact = output_difference(outputs, reference)
    samples: dict[str, list[float]] = {}
    for _ in range(repeats):
        parts, _ = _repeat(client, model, inputs, attach, cut, encoding, output=False,
                           same_clock=link["same_clock"], rtt_ms=link["rtt_ms"])
        for key, value in parts.items():
            samples.setdefault(key, []).append(value)
    row = {"cut": cut.name, "kind": cut.kind, "encoding": encoding,
           "bandwidth_mbps": link["bandwidth_mbps"], "shaped": link["shaped"],
           "link": link["label"], "rtt_ms": link["rtt_ms"],
           "throughput_mbps": link["throughput_mbps"], "repeats": repeats,
           "analysis_bytes": cut.sizes.get(encoding)}
    row.update(executed_row(samples, sent_bytes=int(samples["sent_bytes"][-1]),
                            header_bytes=int(samples["header_bytes"][-1]),
                            bandwidth_mbit=link["bandwidth_mbps"] if link["shaped"]
                            else link["throughput_mbps"], rtt_ms=link["rtt_ms"]))
    row.update({"output_max_abs_diff": difference, "output_exact": exact})
    return row


def _measure_link(client: SplitClient, **link) -> dict:
    link["rtt_ms"] = client.round_trip_ms()
    link["throughput_mbps"] = client.throughput_mbit(
        _PROBE_BYTES, None if link["same_clock"] else link["rtt_ms"])
    return link


def _links(stack: ExitStack, args, overrides: Sequence[str], identity: dict):
    """Each link to run on: ``(client, link description)``, and the note that says how."""
    if args.server:
        host, port = parse_server(args.server)
        token = args.token or os.environ.get("STAGEZOO_TOKEN")
        client = SplitClient(SplitClient.connect(host, port), identity, token)
        stack.callback(client.close)
        yield client, _measure_link(client, bandwidth_mbps=float("nan"), shaped=False,
                                    label=f"server {host}:{port}", same_clock=False)
        return
    reason = unshaped_reason()
    if reason is not None:
        server = _Server(overrides, None)
        stack.callback(server.close)
        client = SplitClient(SplitClient.connect("127.0.0.1", server.port), identity,
                             server.token)
        stack.callback(client.close)
        yield client, _measure_link(client, bandwidth_mbps=float("nan"), shaped=False,
                                    label=f"unshaped loopback ({reason})", same_clock=True)
        return
    link = stack.enter_context(Link(f"sz{os.getpid() % 100000}"))
    server = _Server(overrides, link)
    stack.callback(server.close)
    for bandwidth in args.bandwidth:
        link.shape(bandwidth, args.rtt)
        client = SplitClient(link.connect(server.port), identity, server.token)
        label = link.describe(bandwidth, args.rtt)
        try:
            yield client, _measure_link(client, bandwidth_mbps=float(bandwidth), shaped=True,
                                        label=label, same_clock=True)
        finally:
            client.close()


def execute(cfg, args, analysis, model, inputs, attach, codecs: Sequence[str],
            reference: Sequence[torch.Tensor]) -> tuple[pd.DataFrame, list[str]]:
    """Run every cut of ``analysis`` as the module's docstring says: ``executed.csv``'s table
    and the terminal lines."""
    overrides = list(args.overrides)
    identity = model_identity(cfg, model)
    cuts = executed_cuts(analysis, args.depth)
    rows = []
    with ExitStack() as stack:
        for client, link in _links(stack, args, overrides, identity):
            for cut in cuts:
                for encoding in ("raw", *codecs):
                    rows.append(_configuration(client, (model, inputs, attach, reference),
                                               cut, encoding, link, args.repeats))
    executed = pd.DataFrame(rows)
    return executed, executed_lines(executed)


def executed_lines(executed: pd.DataFrame) -> list[str]:
    """The terminal's account of an execution: the link, each configuration's measured and
    estimated latency, the best cuts measured and estimated."""
    lines = ["", "executed cuts (end-to-end median ms [interval]; estimate: the formula with "
                 "this run's parts, then with the extra terms):"]
    for label, group in executed.groupby("link", sort=False):
        first = group.iloc[0]
        lines.append(f"link: {label}; RTT {first['rtt_ms']:.2f} ms, throughput "
                     f"{first['throughput_mbps']:.1f} Mbit/s")
        for _, row in group.iterrows():
            lines.append(f"  {row['cut'][:36]:<37}{row['encoding']:<10}"
                         f"{row['sent_bytes'] / 1e6:>9.3f} MB"
                         f"{row['measured_ms_median']:>10.1f} [{row['measured_ms_low']:.1f}, "
                         f"{row['measured_ms_high']:.1f}]  est {row['estimated_ms']:.1f} "
                         f"({row['error']:+.0%}), {row['estimated_terms_ms']:.1f} "
                         f"({row['error_terms']:+.0%})"
                         + (f"  differs: {row['differs']}" if row["differs"] else "")
                         + ("" if row["output_exact"] else
                            f"  output diff {row['output_max_abs_diff']:.3g}"))
    best = best_measured_and_estimated(executed)
    lines.append("best cut per bandwidth, measured | estimated:")
    for _, row in best.iterrows():
        lines.append(f"  {row['encoding']:<10}{row['bandwidth_mbps']:>8g} Mbit/s  "
                     f"{row['measured_best']} {row['measured_ms']:.1f} ms | "
                     f"{row['estimated_best']} {row['estimated_ms']:.1f} ms")
    lines.append(f"median |error| {executed['error'].abs().median():.1%}, with the terms "
                 f"{executed['error_terms'].abs().median():.1%}")
    return lines
