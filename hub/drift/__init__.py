"""The drift watch (DESIGN §10.6, §15): live per-tool hashes, drifted tools, and their diffs.

:class:`DriftWatch` (a component) probes servers and marks drifted tools; the gateway asks it to
re-list a server after an upstream ``-32020``.
"""

from hub.drift.watch import DriftWatch

__all__ = ["DriftWatch"]
