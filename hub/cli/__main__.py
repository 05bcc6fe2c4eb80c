"""``python -m hub.cli`` runs the ``hub`` command."""

from hub.cli import main

main()
