"""ragfair — "Teaching RAG to play fair": encoder bias diagnosis and mitigation (paper-specific code)."""
