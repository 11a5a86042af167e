"""What a reply is given besides the history: retrieval of archived exchanges, the visitor
profile, the prompt's budget."""
