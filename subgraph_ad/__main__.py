"""``python -m subgraph_ad`` runs the ``subgraph-ad`` command."""

from .cli import main

raise SystemExit(main())
