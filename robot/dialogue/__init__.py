"""The dialogue: the turn state machine and the handlers a turn asks before the LLM (the shop's knowledge among them)."""
