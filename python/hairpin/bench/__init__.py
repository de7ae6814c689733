"""Benchmarks of Hairpin's controller-facing features (results in docs/bench/)."""
