"""GMFlow with refinement: global matching at 1/8, then local matching at 1/4."""

from __future__ import annotations

from typing import Any, Sequence

from .model import GMFlow, gmflow_stage_names

__all__ = ["GMFlowRefine"]


class GMFlowRefine(GMFlow):
    """The official ``gmflow_with_refine`` model (``--num_scales 2 --upsample_factor 4``).

    The encoder stops at 1/4 (``layer3`` keeps the resolution) and a trident conv with one
    shared kernel gives the 1/8 and 1/4 features. At 1/8, GMFlow runs as usual (global
    matching, windows of ``attn_splits_list[0]``). At 1/4, the flow is upsampled ×2 and image 1's
    feature is warped by it (stage ``flow_warp``), the transformer runs in finer windows, local
    matching in a ``(2R+1)²`` window estimates a residual flow, and the propagation is local.
    Every per-scale stage is then called once per scale; ``call_index`` 0 is the 1/8 scale.
    """

    stage_names = gmflow_stage_names((-1, 4))

    def __init__(self, *, num_scales: int = 2, upsample_factor: int = 4,
                 attn_splits_list: Sequence[int] = (2, 8),
                 corr_radius_list: Sequence[int] = (-1, 4),
                 prop_radius_list: Sequence[int] = (-1, 1), **options: Any) -> None:
        super().__init__(num_scales=num_scales, upsample_factor=upsample_factor,
                         attn_splits_list=attn_splits_list, corr_radius_list=corr_radius_list,
                         prop_radius_list=prop_radius_list, **options)
