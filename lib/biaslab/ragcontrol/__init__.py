"""ragcontrol — "Mitigating Bias in RAG: Controlling the Embedder" (Kim et al. 2025; paper-specific code)."""
