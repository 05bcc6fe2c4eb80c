"""Makes the peer fixtures available to the tests of this package (other packages do the same)."""

from tests.peers.fixtures import everything_peer, handmade_peer, node_tools, sdk_peer

__all__ = ["everything_peer", "handmade_peer", "node_tools", "sdk_peer"]
