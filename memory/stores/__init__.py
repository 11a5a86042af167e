"""Where memory is kept: the store protocol, SQLite, PostgreSQL, the location that picks one,
turns waiting for a store that is away, and the bound on how long a turn waits for one."""
