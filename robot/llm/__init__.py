"""The LLM: one client on the openai package for every backend.

The embedded backend starts llama.cpp's own HTTP server in-process (xllamacpp) on a free
loopback port and is then spoken to exactly like OpenAI, Ollama or vLLM.
"""

from robot.llm.client import LLMClient, LLMError, LLMUnreachable
from robot.llm.factory import LLMs, open_llm, open_llms

__all__ = ["LLMClient", "LLMError", "LLMUnreachable", "LLMs", "open_llm", "open_llms"]
