"""The grants domain's dependency aliases: the replica's compiled-policy cache."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from hub.core.components import component
from hub.grants.cache import PolicyCache

__all__ = ["PolicyCacheDep"]

PolicyCacheDep = Annotated[PolicyCache, Depends(component(PolicyCache))]
