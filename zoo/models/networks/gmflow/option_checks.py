"""GMFlow's options checked before any part is built, and the input sizes its windows accept.

Each bad value is one :class:`~zoo.options.ConfigError` that names the option and what is
accepted, so that :mod:`.model` only assembles the parts of a configuration known to be valid.
"""

from __future__ import annotations

from typing import Any, Sequence

from zoo.options import ConfigError, check_minimum

from .attention import ATTENTION_IMPLS
from .relative_position import POSITION_ENCODINGS

__all__ = ["check_options", "per_scale", "fitted_input_size"]


def per_scale(values: Sequence[int], name: str, num_scales: int) -> tuple[int, ...]:
    """``values`` as a tuple of one integer per scale: ``attn_splits_list`` takes integers
    >= 1, the radius lists -1 (global) or a radius >= 1."""
    values = tuple(int(v) for v in values)
    if len(values) != num_scales:
        raise ConfigError(f"{name} has {len(values)} entries; it needs one per scale "
                          f"(num_scales={num_scales})")
    minimum = 1 if name == "attn_splits_list" else -1
    if any(v < minimum or v == 0 for v in values):
        accepted = "integers >= 1" if minimum == 1 else "-1 (global) or a radius >= 1"
        raise ConfigError(f"{name}={list(values)} is not accepted; accepted: {accepted}")
    return values


def _check_choice(name: str, value: Any, accepted: Sequence[Any]) -> None:
    if value not in accepted:
        raise ConfigError(f"{name}={value!r} is not accepted; accepted: "
                          f"{', '.join(map(str, accepted))}")


def _layer3_stride(upsample_factor: int, first_stride: int) -> int:
    """The stride of the encoder's ``layer3`` (1 or 2) that gives features at
    ``upsample_factor``, the stride the convex upsampler undoes."""
    if first_stride < 1:
        raise ConfigError(f"first_stride={first_stride} is not accepted; accepted: >= 1")
    valid = (2 * first_stride, 4 * first_stride)
    if upsample_factor not in valid:
        raise ConfigError(f"upsample_factor={upsample_factor} does not match the encoder "
                          f"(first_stride={first_stride} gives features at stride "
                          f"{valid[0]} or {valid[1]}); accepted: {valid[0]}, {valid[1]}")
    return upsample_factor // (2 * first_stride)


def _check_architecture(feature_channels: int, num_head: int, first_kernel_size: int, *,
                        sine: bool) -> None:
    if sine and (feature_channels < 4 or feature_channels % 4):
        raise ConfigError(f"feature_channels={feature_channels} is not accepted; accepted: "
                          f"a multiple of 4 (the sine position encoding needs it)")
    if num_head < 1 or feature_channels % num_head:
        raise ConfigError(f"num_head={num_head} does not divide "
                          f"feature_channels={feature_channels}; accepted: a divisor of it")
    if first_kernel_size < 1 or first_kernel_size % 2 == 0:
        raise ConfigError(f"first_kernel_size={first_kernel_size} is not accepted; "
                          f"accepted: an odd size (padding k//2 keeps the stride exact)")


def check_options(*, num_scales: int, upsample_factor: int, first_stride: int,
                  feature_channels: int, num_head: int, first_kernel_size: int,
                  attention_type: str, attention_impl: str, position_encoding: str,
                  in_channels: int, ffn_dim_expansion: int, num_transformer_layers: int) -> int:
    """Raise :class:`~zoo.options.ConfigError` for the first option GMFlow cannot be built
    with; return the encoder's ``layer3`` stride that ``upsample_factor`` asks for."""
    if not 1 <= num_scales <= 4:
        raise ConfigError(f"num_scales={num_scales} is not accepted; accepted: 1 to 4")
    _check_choice("attention_type", attention_type, ("swin", "full"))
    _check_choice("attention_impl", attention_impl, ATTENTION_IMPLS)
    _check_choice("position_encoding", position_encoding, POSITION_ENCODINGS)
    check_minimum(1, in_channels=in_channels, ffn_dim_expansion=ffn_dim_expansion)
    check_minimum(0, num_transformer_layers=num_transformer_layers)
    layer3_stride = _layer3_stride(upsample_factor, first_stride)
    _check_architecture(feature_channels, num_head, first_kernel_size,
                        sine=position_encoding == "sine")
    return layer3_stride


def fitted_input_size(size: Sequence[int], divisor: int, *, pad: bool, model: str,
                      because: str) -> tuple[int, int]:
    """``(H, W)`` when both are multiples of ``divisor``; the next multiples up with
    ``pad=True``; otherwise a :class:`~zoo.options.ConfigError` naming ``model``, the options
    the divisor comes from (``because``) and the nearest valid sizes."""
    height, width = int(size[0]), int(size[1])
    d = divisor
    if height % d == 0 and width % d == 0:
        return height, width
    if pad:
        return -(-height // d) * d, -(-width // d) * d

    def nearest(n: int) -> list[int]:
        return sorted({max(d, n // d * d), -(-n // d) * d}, key=lambda m: (abs(m - n), m))

    candidates = sorted(((h, w) for h in nearest(height) for w in nearest(width)),
                        key=lambda hw: (abs(hw[0] - height) + abs(hw[1] - width), hw))
    raise ConfigError(
        f"input size {height}x{width} does not fit {model}: height and width must be "
        f"multiples of {d} ({because}); nearest valid sizes: "
        f"{', '.join(f'{h}x{w}' for h, w in candidates)}; or set input.pad=true")
