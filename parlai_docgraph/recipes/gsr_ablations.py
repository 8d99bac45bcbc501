"""
DialogGSR ablations (Park et al. Table 5) as named option sets for ``-m docgraph/gsr``.

Each entry is ``name -> {"train": {...}, "eval": {...}}`` (ParlAI option names, Python
spelling); ``train`` options define the model (special tokens, reconstruction), ``eval``
options the decoding. Variants with equal ``train`` options can share one trained model.
``PAPER_TABLE5`` holds the paper's OpenDialKG figures (B-1..B-4, path@3) for comparison.
"""

from __future__ import annotations

from typing import Dict

#: reconstruction updates used by the "with Recon." variants (scale with the dataset)
RECON_STEPS = 100

ABLATIONS: Dict[str, Dict[str, dict]] = {
    "no_constraint": {
        "train": {"use_special_tokens": True, "gsr_pretrain_steps": 0},
        "eval": {"gsr_constraint": "none"},
    },
    "hard_no_special_tokens": {
        "train": {"use_special_tokens": False, "gsr_pretrain_steps": 0},
        "eval": {"gsr_constraint": "hard"},
    },
    "hard_special_no_recon": {
        "train": {"use_special_tokens": True, "gsr_pretrain_steps": 0},
        "eval": {"gsr_constraint": "hard"},
    },
    "hard_special_recon": {
        "train": {"use_special_tokens": True, "gsr_pretrain_steps": RECON_STEPS},
        "eval": {"gsr_constraint": "hard"},
    },
    "connection_special_recon": {
        "train": {"use_special_tokens": True, "gsr_pretrain_steps": RECON_STEPS},
        "eval": {"gsr_constraint": "connection"},
    },
    "katz_special_recon": {
        "train": {"use_special_tokens": True, "gsr_pretrain_steps": RECON_STEPS},
        "eval": {"gsr_constraint": "katz"},
    },
}

PAPER_TABLE5: Dict[str, Dict[str, float]] = {
    "no_constraint": {"bleu-1": 17.02, "bleu-2": 10.96, "bleu-3": 7.53, "bleu-4": 5.25, "path@3": 10.00},
    "hard_no_special_tokens": {"bleu-1": 18.44, "bleu-2": 11.68, "bleu-3": 7.93, "bleu-4": 5.44, "path@3": 35.83},
    "hard_special_no_recon": {"bleu-1": 18.77, "bleu-2": 11.74, "bleu-3": 8.03, "bleu-4": 5.48, "path@3": 39.53},
    "hard_special_recon": {"bleu-1": 18.83, "bleu-2": 11.84, "bleu-3": 8.01, "bleu-4": 5.49, "path@3": 43.27},
    "connection_special_recon": {"bleu-1": 19.17, "bleu-2": 11.90, "bleu-3": 8.15, "bleu-4": 5.68, "path@3": 45.85},
    "katz_special_recon": {"bleu-1": 19.30, "bleu-2": 12.10, "bleu-3": 8.30, "bleu-4": 5.83, "path@3": 46.76},
}


def cli_args(options: dict) -> list:
    """``{"gsr_constraint": "hard"} -> ["--gsr-constraint", "hard"]`` (``ablate`` logs each
    variant's options so, as a command line that reproduces it)."""
    out = []
    for key, value in options.items():
        out += ["--" + key.replace("_", "-"), str(value).lower() if isinstance(value, bool) else str(value)]
    return out


def flat_variants() -> Dict[str, dict]:
    """``name -> options`` (train and eval merged), the form ``parlai-docgraph ablate`` takes."""
    return {name: {**v["train"], **v["eval"]} for name, v in ABLATIONS.items()}
