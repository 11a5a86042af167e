"""What a reply is given besides the history: retrieval of archived exchanges, the visitor
profile and its slot types (``slots/``), the prompt's budget."""
