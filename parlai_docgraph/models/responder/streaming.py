"""
Token-by-token reply streaming for :meth:`.model.Responder.generate` (no ParlAI here).

:class:`ReplyStreamer` is a ``transformers`` streamer (a ``BaseStreamer`` subclass, the
interface ``generate(streamer=...)`` calls): ``generate`` hands it the prompt first, then
each new token as it is chosen. The streamer decodes the whole reply so far and passes on
the new text only, so tokenizers whose tokens carry spaces or partial characters
(byte-level BPE of GPT-2 and SmolLM2/Llama, SentencePiece) stream the same text the final
decode gives; an incomplete UTF-8 sequence (``"\\ufffd"`` at the end) waits for the next
token. It works for any decoder-only LM: it sees token ids, never the model.

``should_stop`` makes a generation cancellable (a turn over its time limit, a client that
went away): when it returns true, the next token raises :class:`GenerationStopped` out of
``generate``, which leaves the LM unchanged.
"""

from __future__ import annotations

from typing import Callable, List, Optional

from transformers.generation.streamers import BaseStreamer


class GenerationStopped(RuntimeError):
    """Raised out of ``generate`` by a streamer whose ``should_stop`` said so."""


class ReplyStreamer(BaseStreamer):
    """
    Passes each new piece of reply text to ``on_text`` as ``generate`` produces it.

    :param decode: token ids -> text (special tokens skipped, as the final reply is decoded)
    :param on_text: called with each new piece of text; None: only ``should_stop`` is used
    :param should_stop: polled at every token; true raises :class:`GenerationStopped`
    :param eos_id: the token that ends the reply (never decoded)
    """

    def __init__(self, decode: Callable[[List[int]], str],
                 on_text: Optional[Callable[[str], None]] = None,
                 should_stop: Optional[Callable[[], bool]] = None,
                 eos_id: Optional[int] = None) -> None:
        self.decode = decode
        self.on_text = on_text
        self.should_stop = should_stop
        self.eos_id = eos_id
        self.tokens: List[int] = []
        self.sent = ""  # the text passed on so far
        self._prompt_seen = False
        self._ended = False

    def put(self, value) -> None:
        """``generate``'s call: the prompt (first call, skipped), then new token ids."""
        if self.should_stop is not None and self.should_stop():
            raise GenerationStopped("generation stopped")
        ids = value.tolist() if hasattr(value, "tolist") else list(value)
        while ids and isinstance(ids[0], list):  # a batch of one: [[...]]
            if len(ids) > 1:
                raise ValueError("ReplyStreamer streams a batch of one")
            ids = ids[0]
        if not self._prompt_seen:
            self._prompt_seen = True
            return
        if self._ended:
            return
        for token in ids:
            if self.eos_id is not None and int(token) == self.eos_id:
                self._ended = True
                break
            self.tokens.append(int(token))
        self._flush(final=False)

    def end(self) -> None:
        """``generate`` finished: pass on whatever text is left."""
        self._flush(final=True)

    def _flush(self, final: bool) -> None:
        text = self.decode(self.tokens)
        if not final and text.endswith("\ufffd"):
            return  # the rest of a multi-byte character comes with the next token
        if text.startswith(self.sent) and len(text) > len(self.sent):
            new, self.sent = text[len(self.sent):], text
            if self.on_text is not None:
                self.on_text(new)


__all__ = ["GenerationStopped", "ReplyStreamer"]
