"""What memory brings back for a reply: the visitor profile and its slot types (``slots/``)."""
