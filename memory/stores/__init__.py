"""Where memory is kept: the store protocol, SQLite, PostgreSQL, the location that picks one,
turns waiting for a store."""
