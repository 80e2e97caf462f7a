"""Metrics of the five papers: SEAT (ragfair), and — as the papers land — detection, fairness, IR and
ranking-bias measures. Each is tested against hand-worked examples."""
