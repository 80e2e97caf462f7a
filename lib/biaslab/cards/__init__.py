"""Bias cards across papers (issue 15 §2): every checkpoint the pipeline trains, measured the same way."""
