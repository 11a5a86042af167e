"""Replies: the LLM's stream as sentences to speak, their length and timing, and the grounding guard.

Until the restructure (issue 25) moves robot/reply.py in here, that module, which this package
shadows, is loaded from its file and its names are this package's (``from robot.reply import
Reply`` keeps working). At the merge this file becomes the restructure's own ``__init__.py``.
"""

import importlib.util as _util
import sys as _sys
from pathlib import Path as _Path

_spec = _util.spec_from_file_location("robot._reply_stream", _Path(__file__).resolve().parent.parent / "reply.py")
assert _spec is not None and _spec.loader is not None
_stream = _util.module_from_spec(_spec)
_sys.modules[_spec.name] = _stream
_spec.loader.exec_module(_stream)

from robot._reply_stream import *  # noqa: E402,F401,F403
from robot._reply_stream import ReplyLLM, Sentence  # noqa: E402,F401  (Protocols and dataclasses, named)
