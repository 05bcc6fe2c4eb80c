"""The drift watch (DESIGN §10.6, §15): live per-tool hashes, drifted tools, and their diffs."""
