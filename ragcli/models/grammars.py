"""GBNF grammars (llama.cpp's format) for the output shapes ragcli asks for, and the tolerant
parser of the claim verdicts (which must also read replies from servers that cannot constrain)."""
from __future__ import annotations

import json
import re
from typing import Optional

from ragcli.models.chat import JsonSchema

_GBNF_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _gbnf_literal(text: str) -> str:
    """A GBNF string literal matching exactly `text`."""
    def escape(ch: str) -> str:
        if ch in _GBNF_ESCAPES:
            return _GBNF_ESCAPES[ch]
        return f"\\x{ord(ch):02X}" if ord(ch) < 0x20 or ord(ch) == 0x7F else ch

    return '"' + "".join(escape(ch) for ch in text) + '"'


def forced_text_grammar(text: str) -> str:
    """GBNF accepting only `text` (tests use it to force a model's output)."""
    if not text:
        raise ValueError("forced text must not be empty")
    return f"root ::= {_gbnf_literal(text)}\n"


def one_line_grammar(max_chars: int = 200) -> str:
    """GBNF for one line of printable text (no control characters), 1..max_chars characters,
    not starting with a space. Used for query rewriting."""
    if max_chars < 1:
        raise ValueError("max_chars must be at least 1")
    tail = f" [^\\x00-\\x1F\\x7F]{{0,{max_chars - 1}}}" if max_chars > 1 else ""
    return f"root ::= [^\\x00-\\x20\\x7F]{tail}\n"


VERDICTS = ("supported", "partial", "unsupported")


def json_verdicts_grammar(n_claims: int, verdicts: tuple[str, ...] = VERDICTS) -> str:
    """GBNF for a JSON array of exactly n_claims objects, in order:
    [{"claim": 1, "verdict": "supported"}, {"claim": 2, "verdict": "unsupported"}]"""
    if n_claims < 1:
        raise ValueError("n_claims must be at least 1")
    choices = " | ".join(_gbnf_literal(json.dumps(v)) for v in verdicts)
    items = []
    for i in range(1, n_claims + 1):
        items.append(_gbnf_literal('{"claim": ' + str(i) + ', "verdict": ') + " verdict " + '"}"')
    body = ' ", " '.join(items)
    return f'root ::= "[" {body} "]"\nverdict ::= {choices}\n'


def verdicts_constraint(n_claims: int, verdicts: tuple[str, ...] = VERDICTS) -> JsonSchema:
    """The verdict array as a JSON schema (for servers) with its exact GBNF (for llama.cpp)."""
    schema = {
        "type": "array", "minItems": n_claims, "maxItems": n_claims,
        "items": {"type": "object", "additionalProperties": False, "required": ["claim", "verdict"],
                  "properties": {"claim": {"type": "integer", "minimum": 1, "maximum": n_claims},
                                 "verdict": {"type": "string", "enum": list(verdicts)}}},
    }
    return JsonSchema(schema, gbnf=json_verdicts_grammar(n_claims, verdicts))


_VERDICT_ITEM = re.compile(r"claim\W{0,4}(\d+)\W{1,8}(?:verdict\W{1,6})?(" + "|".join(
    sorted(VERDICTS, key=len, reverse=True)) + r")\b", re.I)


def json_value(text: str):
    """The JSON value in a reply, tolerating what unconstrained models add around it (prose, a
    ```json fence): the whole text, else the span from the first [ or { to the last ] or }."""
    try:
        return json.loads(text)
    except (json.JSONDecodeError, TypeError):
        pass
    starts = [i for i in (text.find("["), text.find("{")) if i >= 0]
    if not starts:
        return None
    start = min(starts)
    end = max(text.rfind("]"), text.rfind("}"))
    try:
        return json.loads(text[start:end + 1]) if end > start else None
    except json.JSONDecodeError:
        return None


def parse_verdicts(text: str, n_claims: int) -> list[Optional[str]]:
    """Verdicts by claim number (claim i at position i-1); None if missing. Reads the JSON array,
    else "claim 2 ... unsupported" pairs in free text."""
    out: list[Optional[str]] = [None] * n_claims
    data = json_value(str(text))
    if isinstance(data, list):
        for item in data:
            if isinstance(item, dict) and isinstance(item.get("claim"), int):
                i = item["claim"]
                if 1 <= i <= n_claims and isinstance(item.get("verdict"), str):
                    out[i - 1] = item["verdict"]
        return out
    for number, verdict in _VERDICT_ITEM.findall(str(text)):
        i = int(number)
        if 1 <= i <= n_claims and out[i - 1] is None:
            out[i - 1] = verdict.lower()
    return out

