"""The OAuth domain's dependency aliases."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from hub.core.components import component
from hub.oauth.context import OAuthContext

__all__ = ["OAuthContextDep"]

OAuthContextDep = Annotated[OAuthContext, Depends(component(OAuthContext))]
