"""The gateway engine (DESIGN §10.2): pure call-path logic over ports, no database code."""
