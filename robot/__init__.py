"""The controller: dialogue loop, LLM client, event hooks, CLI and headless simulator."""
