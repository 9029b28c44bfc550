"""``python -m subgraph_ad.cli``."""

from . import main

raise SystemExit(main())
