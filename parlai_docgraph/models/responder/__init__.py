"""
The knowledge-grounded response generator. Modules: ``model`` (:class:`~.model.Responder`,
a causal LM over ``[knowledge; context]``), ``chat`` (chat templates of instruction-tuned
LMs), ``streaming`` (:class:`~.streaming.ReplyStreamer`), ``earlier_replies``
(``--block-earlier-replies``). ParlAI's generation options become one ``transformers``
``generate`` call in :mod:`parlai_docgraph.models.decoding`, which DialogGSR shares.
"""
