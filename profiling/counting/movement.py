"""Operators without arithmetic: free views and metadata, and data movement.

Views, aliases, metadata queries and uninitialised allocations cost nothing: no FLOPs, no
bytes. Copies, concatenation, padding, indexing, gathers and scatters, and tensor factories
cost no FLOPs but move bytes: by default every tensor argument is read and every output
written; factories and fills only write, ``copy_`` reads its source only, and ``index_put_``
writes only the values it puts.

Operators that are a view or a copy depending on the strides (``flatten``, ``contiguous``,
``reshape``) have no formula on purpose: the counter prices them by their decomposition, so a
flatten of a contiguous tensor is the free ``view`` it is and one of a transposed tensor is
the ``clone`` it needs (``inference_mode`` hands them to the counter whole).
"""

from __future__ import annotations

import torch

from .registry import OpCost, register_formula, register_free, tensor_bytes, tensors_in, variants

aten = torch.ops.aten

__all__ = ["movement"]


def _existing(*names: str) -> list:
    return [getattr(aten, name) for name in names if hasattr(aten, name)]


register_free(_existing(
    "view", "_unsafe_view", "_reshape_alias", "view_as", "t", "t_", "transpose", "transpose_",
    "permute", "expand", "squeeze", "squeeze_", "unsqueeze", "unsqueeze_", "slice", "select",
    "as_strided", "as_strided_", "detach", "detach_", "alias", "lift_fresh", "split",
    "split_with_sizes", "unsafe_split", "unsafe_split_with_sizes", "unbind", "chunk",
    "unsafe_chunk", "narrow", "diagonal", "unfold", "view_as_real", "view_as_complex",
    "resolve_conj", "resolve_neg", "conj", "_conj", "_neg_view", "real", "imag",
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided",
    "_local_scalar_dense", "is_nonzero", "is_same_size", "result_type", "size", "sym_size",
    "stride", "sym_stride", "numel", "sym_numel", "dim", "storage_offset",
    "sym_storage_offset", "is_contiguous", "sym_is_contiguous", "is_strides_like_format",
    "is_non_overlapping_and_dense", "_has_compatible_shallow_copy_type", "set_",
    "record_stream", "_assert_async", "_assert_tensor_metadata", "_functional_assert_async",
    "_nested_tensor_from_mask_left_aligned",
))
register_free([torch.ops.prim.device, torch.ops.prim.layout])


def movement(args, kwargs, out) -> OpCost:
    """No FLOPs; the default bytes (every tensor argument read, every output written)."""
    return OpCost()


register_formula(variants(
    aten, "clone", "_to_copy", "cat", "stack", "hstack", "vstack", "constant_pad_nd",
    "reflection_pad1d", "reflection_pad2d", "reflection_pad3d", "replication_pad1d",
    "replication_pad2d", "replication_pad3d", "index", "_unsafe_index", "index_select",
    "gather", "take", "take_along_dim", "masked_select", "repeat", "repeat_interleave", "roll",
    "flip", "tril", "triu", "im2col", "col2im", "pixel_shuffle", "pixel_unshuffle",
    "channel_shuffle", "native_channel_shuffle", "embedding", "where", "masked_fill",
    "masked_scatter", "scatter", "index_fill", "index_copy", "nonzero", "diag_embed", "diag",
    "lift_fresh_copy", "detach_copy", "expand_copy", "unfold_copy", "alias_copy",
    "to_dense",
))(movement)


@register_formula(variants(
    aten, "zeros", "ones", "full", "zeros_like", "ones_like", "full_like", "new_zeros",
    "new_ones", "new_full", "arange", "linspace", "logspace", "scalar_tensor", "eye", "fill",
    "zero", "rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "randperm",
    "normal", "uniform", "bernoulli", "random", "exponential", "multinomial"))
def _factory(args, kwargs, out):
    return OpCost(bytes_read=0)


register_formula(aten.copy)(movement)


@register_formula(aten.copy_)
def _copy_(args, kwargs, out):
    return OpCost(bytes_read=tensor_bytes(args[1]), bytes_written=tensor_bytes(args[0]))


@register_formula(variants(aten, "index_put", "_index_put_impl"))
def _index_put(args, kwargs, out):
    values = args[2]
    read = sum(tensor_bytes(t) for t in tensors_in(args[1])) + tensor_bytes(values)
    return OpCost(bytes_read=read, bytes_written=tensor_bytes(values))


@register_formula(variants(aten, "scatter_add", "scatter_reduce", "index_add", "index_reduce"))
def _accumulate_into(args, kwargs, out):
    # (self, dim, index, source, ...): one addition (or reduction step) per source element.
    source = args[3]
    return OpCost(flops=source.numel() if source.is_floating_point() else 0)
