"""The grants domain's dependency aliases: the replica's compiled-policy cache."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from hub.core.components import component
from hub.grants.cache import PolicyCache
from hub.grants.effective import EffectiveCheck

__all__ = ["EffectiveCheckDep", "PolicyCacheDep"]

PolicyCacheDep = Annotated[PolicyCache, Depends(component(PolicyCache))]
EffectiveCheckDep = Annotated[EffectiveCheck, Depends(component(EffectiveCheck))]
