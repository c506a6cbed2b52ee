"""Storage engines behind one interface (``base.Store``): memory and SQLite (WAL, group commit)."""
