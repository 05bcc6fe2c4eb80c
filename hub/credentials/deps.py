"""The credentials domain's dependency aliases."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from hub.core.components import component
from hub.credentials.service import CredentialContext

__all__ = ["CredentialContextDep"]

CredentialContextDep = Annotated[CredentialContext, Depends(component(CredentialContext))]
