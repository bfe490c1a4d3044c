"""A Vision Transformer made of the language model's blocks (paper A section 5.6, Table 5, Fig. 8).

An image (B, C, H, W) is cut into p x p patches; each, flattened as (p, p, C), is mapped to the
residual width by a Linear. With vision.pool=cls a learned class token goes in front, and learned
absolute position embeddings are added. The blocks are `cod.model`'s with attention both ways
and no rotary embeddings (model.causal=false, model.rope=false), so the norm placements, LNS
positions, initialisations, named states (`keep=`) and layer orders (`order=`) of the language
model apply unchanged. After the final norm a Linear classifier reads the class token's state,
or the mean of the patches' states (pool=mean). Paper A trains ViT-S without LayerScale: that
is model.branch_gain=none, the default.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from cod.config import ModelConfig, Pool, VisionConfig
from cod.model import Transformer


class VisionTransformer(Transformer):
    """`VisionTransformer(cfg, vision)(images, labels)` -> ModelOutput with logits (B, n_classes)."""

    EMBEDDINGS = ("cls_token", "pos_embed")  # exempt from weight decay by default, as in DeiT

    def __init__(self, cfg: ModelConfig, vision: VisionConfig):
        vision.validate()
        vision.check_model(cfg)
        self.vision = vision  # set first: Transformer.__init__ calls build_embedding and build_head
        super().__init__(cfg)

    def build_embedding(self) -> None:
        v, d = self.vision, self.cfg.d_model
        self.patch_embed = nn.Linear(v.patch_size * v.patch_size * v.channels, d)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, d)) if v.pool == Pool.CLS else None
        self.pos_embed = nn.Parameter(torch.zeros(1, v.n_tokens, d))

    def build_head(self) -> None:
        self.classifier = nn.Linear(self.cfg.d_model, self.vision.n_classes)

    def reset_embedding_and_head(self) -> None:
        """N(0, init_std^2) patch, class and position embeddings and classifier; zero biases."""
        std = self.cfg.init_std
        for p in (self.patch_embed.weight, self.cls_token, self.pos_embed, self.classifier.weight):
            if p is not None:
                nn.init.normal_(p, std=std)
        nn.init.zeros_(self.patch_embed.bias)
        nn.init.zeros_(self.classifier.bias)

    def random_input(self) -> torch.Tensor:
        """A fixed batch of 8 images of standard normal pixels (8, C, H, W), for profiling."""
        v = self.vision
        return torch.randn((8, v.channels, v.side, v.side), generator=torch.Generator().manual_seed(0))

    def embed(self, images: torch.Tensor) -> torch.Tensor:
        """(B, C, H, W) images -> (B, T, D) residual stream entering the first block."""
        v, p = self.vision, self.vision.patch_size
        if images.shape[1:] != (v.channels, v.side, v.side):
            raise ValueError(f"images of shape {tuple(images.shape)}; {v.dataset} needs (B, {v.channels}, {v.side}, "
                             f"{v.side})")
        B, n = images.shape[0], v.side // p
        patches = images.reshape(B, v.channels, n, p, n, p).permute(0, 2, 4, 3, 5, 1)  # (B, n, n, p, p, C)
        x = self.patch_embed(patches.reshape(B, n * n, p * p * v.channels))  # (B, N, D)
        if self.cls_token is not None:
            x = torch.cat([self.cls_token.expand(B, -1, -1), x], dim=1)  # (B, 1 + N, D)
        return x + self.pos_embed  # (B, T, D)

    def head(
        self, x: torch.Tensor, targets: torch.Tensor | None = None, logits: bool = True
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Final norm, pooling and classifier; (B, T, D) -> logits (B, n_classes) and the mean loss
        (the class logits are small, so they are always formed)."""
        x = self.final_norm(x)  # (B, T, D)
        pooled = x[:, 0] if self.cls_token is not None else x.mean(dim=1)  # (B, D)
        logits = self.classifier(pooled)  # (B, n_classes)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.to(torch.promote_types(logits.dtype, torch.float32)), targets)
        return logits, loss
