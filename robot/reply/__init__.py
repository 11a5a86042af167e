"""The reply: an LLM stream cut into sentences to speak, within the spoken-length budget and
the customer's patience."""
