"""The Helm chart under test: render and lint it with ``helm-python-sdk`` (Helm's own Go SDK
through ``libhelm_c``, bundled in the wheel: no helm binary, no cluster, no network), and read
the rendered manifests strictly (a duplicated key is an error, as it is for the API server).
"""

from __future__ import annotations

from collections.abc import Hashable
from pathlib import Path
from typing import Any

import helm_python as helm
import yaml

__all__ = [
    "CHART",
    "KUBERNETES_VERSIONS",
    "PRODUCTION_VALUES",
    "Manifest",
    "lint",
    "render",
]

CHART = Path(__file__).resolve().parents[2] / "deploy" / "helm" / "mcp-hub"
PRODUCTION_VALUES = Path(__file__).with_name("values-production.yaml")
# The chart's kubeVersion floor and the newest schema kubernetes-validate 1.37 bundles.
KUBERNETES_VERSIONS = ("1.29.0", "1.37.0")
RELEASE = "hub"
NAMESPACE = "mcp"

Manifest = dict[str, Any]


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader refusing a mapping that names one key twice."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        seen: set[object] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            assert key not in seen, f"duplicate key {key!r} at {key_node.start_mark}"
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def load_values(path: Path) -> dict[str, Any]:
    loaded = yaml.load(path.read_text(), Loader=_StrictLoader)  # noqa: S506 - a SafeLoader
    assert isinstance(loaded, dict)
    return loaded


def render(values: dict[str, Any] | None = None) -> tuple[list[Manifest], str]:
    """Every object the chart renders for an install with ``values``, and NOTES.txt."""
    with helm.Chart.load(CHART) as chart:
        files = chart.render(values, name=RELEASE, namespace=NAMESPACE, is_install=True)
    notes = ""
    objects: list[Manifest] = []
    for path, text in sorted(files.items()):
        if path.endswith("NOTES.txt"):
            notes = text
            continue
        for document in yaml.load_all(text, Loader=_StrictLoader):
            if document is not None:
                assert isinstance(document, dict), path
                objects.append(document)
    return objects, notes


def lint(values: dict[str, Any] | None, kubernetes_version: str) -> dict[str, Any]:
    """``helm lint --strict`` of the chart with ``values`` for a Kubernetes version."""
    return helm.lint(CHART, values, strict=True, kube_version=f"v{kubernetes_version}")
