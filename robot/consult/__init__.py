"""Consulting, as a travel agent at a counter does it, without the LLM: the shop's offers as typed
rows (``offers.py``), exact quotes for the visitor's party (``quote.py``), recommendations that
meet every hard wish (``recommend.py``), what a visitor asks of a consultation (``intents.py``),
what the robot says (``saying.py``), and the sheet staff get with a handover (``sheet.py``).
The turn handler that uses them is robot/dialogue/consult.py."""
