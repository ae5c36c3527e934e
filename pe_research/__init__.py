"""pe_research: positional encodings for transformers, in JAX and Flax NNX.

Dimension key for array names (`x_BLD`, `logits_BHLM`, ...) and einsum strings:
    B batch             L query length        M key length
    D model width       H heads               K head dimension
    J rotary frequencies F MLP width          V vocabulary
    P table positions   T full sequence (one longer than L)
"""

__version__ = "0.1.0"
