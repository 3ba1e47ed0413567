"""The marker that opens a list item: "1.", "2)", "(3)", "a.", "b)", "(c)", a bullet, "Step 4".

sections.py starts a new paragraph at a line that opens with one (a list set in one text block keeps
its items apart), chunking.py keeps the items of a list together with their lead-in.
"""
from __future__ import annotations

import re

# a bare number before a capital ("1 At an arm's distance") is a table's step column; private-use
# characters (U+F0A7...) are the bullets of symbol fonts
ITEM_RE = re.compile(r"^\s*(?:\(?\d{1,2}[.)](?!\d)|\d{1,2}\s+(?=[A-Z\uf000-\uf0ff•])|\(?[a-zA-Z][.)](?=\s)|\([a-z]\)|"
                     r"[•·▪◦●○■□➢►\u2022\u25aa\u2013*\uf000-\uf0ff-](?=\s)|[Ss]tep\s+\d{1,2}\b)")
