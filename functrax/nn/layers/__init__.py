"""Neural-network layers as pytree modules (``functrax.nn.Linear``, ``Conv2d``, ...); each
acts on one example, ``functrax.vmap`` maps it over a batch.

>>> import functrax, functrax.numpy as fnp
>>> from functrax import nn
>>> mlp = nn.MLP(3, 1, width_size=4, depth=1, key=functrax.random.key(0))
>>> functrax.vmap(mlp)(fnp.ones((5, 3))).shape
(5, 1)
"""
from functrax.nn.layers.linear import Embedding, Identity, Linear
from functrax.nn.layers.conv import (
    Conv, Conv1d, Conv2d, Conv3d, ConvTranspose, ConvTranspose1d, ConvTranspose2d,
    ConvTranspose3d,
)
from functrax.nn.layers.pooling import (
    AvgPool, AvgPool1d, AvgPool2d, AvgPool3d, MaxPool, MaxPool1d, MaxPool2d, MaxPool3d,
)
from functrax.nn.layers.normalization import BatchNorm, LayerNorm, RMSNorm
from functrax.nn.layers.dropout import Dropout
from functrax.nn.layers.attention import MultiHeadAttention, MultiheadAttention
from functrax.nn.layers.containers import Lambda, MLP, Sequential

__all__ = [
    "AvgPool", "AvgPool1d", "AvgPool2d", "AvgPool3d", "BatchNorm", "Conv", "Conv1d", "Conv2d",
    "Conv3d", "ConvTranspose", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
    "Dropout", "Embedding", "Identity", "Lambda", "LayerNorm", "Linear", "MLP", "MaxPool",
    "MaxPool1d", "MaxPool2d", "MaxPool3d", "MultiHeadAttention", "MultiheadAttention",
    "RMSNorm", "Sequential",
]
