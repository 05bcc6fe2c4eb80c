"""Every ORM model, imported here so Alembic and the app see the whole schema at once."""

from hub.models.base import Base

__all__ = ["Base"]
