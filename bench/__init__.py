"""Benchmarks (``make bench``): each prints numbers beside a baseline measured in the same run."""
