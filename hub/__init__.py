"""MCP Hub: a multi-tenant control plane for Model Context Protocol tools."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("hub")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0"

__all__ = ["__version__"]
