"""
The one normalisation of text that comes from outside (chat messages, uploads, document
files): what no later stage can encode is replaced by U+FFFD, and counted so the user can be
told.

Replaced:

* lone UTF-16 surrogates (U+D800-U+DFFF). A JSON string may spell one (``"\\ud800"``) and
  Python keeps it in a ``str``, but it has no UTF-8 form: writing it to a file raises
  ``UnicodeEncodeError`` and Hugging Face's tokenizers refuse it (``TextEncodeInput must be
  Union[...]``), so one such character in a chat history failed every later turn;
* Unicode noncharacters (U+FDD0-U+FDEF and the last two code points of every plane,
  U+FFFE, U+FFFF, ..., U+10FFFF): "not for interchange" (Unicode 15, section 23.7), which
  is what a text received from outside is;
* in bytes read as a document: byte sequences that are not UTF-8 (which includes surrogates
  written as three bytes, ``ED A0 80``).

No ParlAI imports (layer 0).
"""

from __future__ import annotations

import re
from typing import Tuple

REPLACEMENT = "\ufffd"
#: lone surrogates and noncharacters (see the module docstring)
UNENCODABLE = re.compile(
    "[\ud800-\udfff\ufdd0-\ufdef\ufffe\uffff"
    + "".join(f"{chr(plane * 0x10000 + 0xFFFE)}{chr(plane * 0x10000 + 0xFFFF)}"
              for plane in range(1, 17))
    + "]")
#: the most replaced characters of a document file that still count as UTF-8 text with a
#: few bad bytes: this share of its characters, or this many in a short file; more is a file
#: in another encoding (Latin-1, ...), which is refused rather than indexed as mojibake
MAX_REPLACED_SHARE, MAX_REPLACED_FEW = 0.01, 16


def clean_text(text: str) -> Tuple[str, int]:
    """``(text with every unencodable character replaced by U+FFFD, how many)``."""
    cleaned, count = UNENCODABLE.subn(REPLACEMENT, text)
    return cleaned, count


def decode_text(data: bytes, where: str) -> Tuple[str, int]:
    """
    ``(text, characters replaced)`` of the UTF-8 bytes of the document ``where``: bytes that
    are not UTF-8 and unencodable characters become U+FFFD. ``ValueError`` (naming
    ``where``) for NUL bytes (a binary or UTF-16 file) and when more characters would be
    replaced than :data:`MAX_REPLACED_SHARE` / :data:`MAX_REPLACED_FEW` allow: such a file
    is in another encoding, and guessing would index mojibake.
    """
    if b"\x00" in data:
        raise ValueError(f"{where}: not UTF-8 text (it has NUL bytes: a binary or UTF-16 "
                         "file); save it as UTF-8")
    try:
        text, bad_bytes = data.decode("utf-8"), 0
    except UnicodeDecodeError as err:
        text = data.decode("utf-8", errors="replace")
        bad_bytes = text.count(REPLACEMENT) - data.count(REPLACEMENT.encode("utf-8"))
        if bad_bytes > max(MAX_REPLACED_SHARE * len(text), MAX_REPLACED_FEW):
            raise ValueError(f"{where}: not UTF-8 text ({bad_bytes} of its {len(text)} "
                             "characters are not); save it as UTF-8") from err
    text, count = clean_text(text)
    return text, bad_bytes + count


def replaced_note(where: str, count: int) -> str:
    """The note that tells the user ``count`` characters of ``where`` were replaced."""
    return (f"{where}: {count} character{'s' if count != 1 else ''} that cannot be encoded "
            "as text (a lone surrogate, a noncharacter or bytes that are not UTF-8) replaced "
            "by \N{REPLACEMENT CHARACTER}")
