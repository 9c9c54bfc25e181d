"""``python -m zoo.serve`` (``stagezoo serve``): the server side of an executed split.

Usage::

    python -m zoo.serve model=swiftnet input.size=[256,512] [device=cuda] \\
        [--host 127.0.0.1] [--port 5577] [--token SECRET] [--max-mb 1024]

It builds the model as ``zoo.split`` does (the same overrides give the same model, inputs and
weights), then runs the tail of each forward a head sends it
(``python -m zoo.split ... --execute --server HOST:PORT``): the received tensors at the cut in,
the rest of the forward on this server's device. It binds to localhost unless ``--host`` says
otherwise, and then needs a shared token (``--token`` or ``$STAGEZOO_TOKEN``). A client that
runs another model, overrides or weights is refused, naming which hash differs; one that
breaks the protocol is refused in one line, and the server goes on serving. It prints
``serving MODEL on HOST:PORT`` once listening, and stops on Ctrl-C.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any, Optional, Sequence

from .cli import ArgumentParser, run_tool
from .registry import register_tool
from ..options import ConfigError

__all__ = ["main", "model_identity", "serve"]

#: The config keys that make two sides run the same forward.
_IDENTITY_KEYS = ("model", "input", "run")


def _parser() -> ArgumentParser:
    parser = ArgumentParser(prog="python -m zoo.serve",
                            description="Serve the tail of a split forward to a head.")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides (model=..., input.size=...)")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to bind (default 127.0.0.1; any other needs a token)")
    parser.add_argument("--port", type=int, default=5577, help="port (default 5577; 0: any)")
    parser.add_argument("--token", default=None,
                        help="shared token a client must send (default $STAGEZOO_TOKEN)")
    parser.add_argument("--max-mb", type=float, default=1024.0,
                        help="largest message accepted, in MB (default 1024)")
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="seconds within which a started message must arrive (default 60)")
    return parser


def model_identity(cfg: Any, model: Any) -> dict[str, str]:
    """The hashes that name what a side runs: ``config`` (the model, input and run options,
    the device aside) and ``weights`` (every parameter's and buffer's bytes)."""
    import torch
    from omegaconf import OmegaConf

    options = {key: OmegaConf.to_container(cfg[key], resolve=True)
               for key in _IDENTITY_KEYS if key in cfg}
    for key in ("warmup", "repeats"):  # how a run is timed is not what it computes
        options.get("run", {}).pop(key, None)
    config = hashlib.sha256(json.dumps(options, sort_keys=True, default=str).encode())
    weights = hashlib.sha256()
    for name, tensor in model.state_dict().items():
        weights.update(name.encode())
        if tensor.numel():
            weights.update(tensor.detach().contiguous().cpu().view(-1).view(torch.uint8).numpy())
    return {"config": config.hexdigest(), "weights": weights.hexdigest()}


def _token(args) -> Optional[str]:
    token = args.token or os.environ.get("STAGEZOO_TOKEN") or None
    from profiling.split import LOOPBACK_HOSTS

    if token is None and args.host not in LOOPBACK_HOSTS:
        raise ConfigError(f"--host {args.host} is reachable from other machines: give a shared "
                          f"token (--token or $STAGEZOO_TOKEN)")
    return token


def serve(cfg: Any, host: str, port: int, *, token: Optional[str] = None,
          max_body: int = 1 << 30, timeout: float = 60.0) -> None:
    """Build the model of ``cfg`` and serve its tails on ``host:port`` until interrupted."""
    import asyncio

    import torch

    from profiling.runner import TailService
    from profiling.split import SplitServer
    from profiling.stages import call_model, iter_tensors

    from .device import resolve_device
    from .job_inputs import prepare

    device = resolve_device(cfg.device)
    model, inputs, attach, _ = prepare(cfg, device)
    with torch.inference_mode():  # caches the model fills on its first forward (masks)
        call_model(model, inputs)
    for tensor in iter_tensors(inputs):  # placeholders: the head's values come over the wire
        tensor.zero_()
    server = SplitServer(TailService(model, inputs, attach), model_identity(cfg, model),
                         token=token, max_body=max_body, timeout=timeout)
    label = cfg.model.name + (f" {cfg.model.arch}" if cfg.model.get("arch") else "")

    def ready(bound_host: str, bound_port: int) -> None:
        print(f"serving {label} on {bound_host}:{bound_port}", flush=True)

    asyncio.run(server.serve(host, port, ready))


def _run(argv: Optional[Sequence[str]]) -> None:
    args = _parser().parse_intermixed_args(argv)
    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port must be in 0..65535, got {args.port}")
    if not args.max_mb > 0 or not args.timeout > 0:
        raise ConfigError("--max-mb and --timeout must be positive")
    token = _token(args)
    from .composition import checked_config

    serve(checked_config(list(args.overrides)), args.host, args.port, token=token,
          max_body=int(args.max_mb * 1e6), timeout=args.timeout)


@register_tool("serve", "serve the tail of a split forward to a head (zoo.split --execute)")
def main(argv: Optional[Sequence[str]] = None) -> None:
    """Entry point of ``python -m zoo.serve``."""
    run_tool("zoo.serve", lambda: _run(argv))


if __name__ == "__main__":
    main()
