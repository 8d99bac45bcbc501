"""
The knowledge-grounded response generator: ``model`` (:class:`~.model.Responder`, a causal
LM over ``[knowledge; context]``), ``decoding`` (ParlAI's generation options mapped onto
one ``transformers`` ``generate`` call), ``chat`` (chat templates of instruction-tuned LMs).
"""
