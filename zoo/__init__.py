"""
Model-zoo entries of parlai-docgraph: ``zoo:docgraph/<module>/<file>``.

The stock ``parlai`` command reaches this package as ``parlai.zoo.docgraph`` through the
start-up hook; ParlAI imports ``parlai.zoo.docgraph.<module>`` and calls its
``download(datapath)``, which must leave the files under
``<datapath>/models/docgraph/<module>/``. See ``model_list.py`` for the catalogue.
"""
