"""The approvals domain's dependency aliases."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from hub.approvals.service import ApprovalContext
from hub.core.components import component

__all__ = ["ApprovalContextDep"]

ApprovalContextDep = Annotated[ApprovalContext, Depends(component(ApprovalContext))]
