"""
Catalogue of parlai-docgraph zoo models, in the format of ``parlai/zoo/model_list.py``
(``title``, ``id``, ``path``, ``agent``, ``task``, ``project``, ``description``,
``example``, ``result``).

Empty until a trained checkpoint exists: an entry is added together with the model it
describes and the command that produced its ``result``.
"""

model_list = []
