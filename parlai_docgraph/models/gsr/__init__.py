"""
DialogGSR (Park et al.). Modules: ``model`` (:class:`~.model.GSRModel`, a seq2seq LM that generates
linearized paths under the trie + Katz constraint, then the response), ``causal`` (the same
for decoder-only LMs), ``build`` (picks one for a loaded LM and adds the structural tokens),
``inputs`` (the token sequences of the three objectives, tries of candidate paths).
"""
