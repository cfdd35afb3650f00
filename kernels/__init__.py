"""Hand-written Triton kernels (one per file)."""
