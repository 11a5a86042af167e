"""The memory stores: SQLite, PostgreSQL, and what wraps them."""
