"""The kiosk robot: the dialogue, its reply and voice, gestures, the LLM, the body (MQTT), the
console, and the application that puts them together."""
