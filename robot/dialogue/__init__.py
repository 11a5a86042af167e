"""The conversation: the turn state machine, the turn handlers asked before the LLM (forget,
more, recap), hearing and barge-in, visitor sessions."""
