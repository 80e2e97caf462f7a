"""Bias cards across papers: every checkpoint the pipeline trains, measured the same way."""
