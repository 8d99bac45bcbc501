"""
The responder's ParlAI dictionary: the LM's own Hugging Face tokenizer behind ParlAI's
``DictionaryAgent`` interface, saved as ``<model_file>.hf/`` beside the checkpoint so
``-mf`` reloads offline (:func:`saved_hf_dir`).
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from typing import List, Optional

import torch

from parlai.core.agents import Agent
from parlai.core.dict import DictionaryAgent
from parlai.core.opt import Opt

from parlai_docgraph.models.responder import chat

HF_SUFFIX = ".hf"


def saved_hf_dir(opt: Opt) -> Optional[str]:
    """
    ``<model_file>.hf`` (or ``<init_model>.hf``) when a saved responder left one.
    """
    for key in ("model_file", "init_model"):
        path = opt.get(key)
        if path and os.path.isfile(os.path.join(path + HF_SUFFIX, "config.json")):
            return path + HF_SUFFIX
    return None


class ResponderDictionaryAgent(DictionaryAgent):
    """
    A ParlAI dictionary over the responder's Hugging Face tokenizer (prebuilt; nothing is
    counted or built). Tokenizer from ``<model_file>.hf`` when saved, else from
    ``--responder-model``.
    """

    def __init__(self, opt: Opt, shared=None) -> None:
        Agent.__init__(self, opt)
        if shared:
            self.hf_tokenizer = shared["hf_tokenizer"]
        else:
            from parlai_docgraph.models.responder.model import load_responder_tokenizer

            source = saved_hf_dir(opt) or opt["responder_model"]
            self.hf_tokenizer = load_responder_tokenizer(source, opt.get("datapath"))
        tok = self.hf_tokenizer
        self.tok2ind = dict(tok.get_vocab())
        self.ind2tok = {i: t for t, i in self.tok2ind.items()}
        self.freq = defaultdict(int, {t: 1 for t in self.tok2ind})
        self.end_token = tok.eos_token
        if chat.use_template(opt.get("chat_template") or "false", tok):  # replies end their turn
            self.end_token = tok.convert_ids_to_tokens(chat.end_of_turn_id(tok))
        self.null_token = tok.pad_token or tok.eos_token
        self.start_token = tok.bos_token or tok.eos_token
        self.unk_token = tok.unk_token or tok.eos_token
        self._unk_token_idx = self.tok2ind.get(self.unk_token)
        self.tokenizer = "hf"
        self.lower = False
        self.minfreq = 0
        self.maxtokens = -1
        self.opt = opt

    def is_prebuilt(self) -> bool:
        return True

    def __len__(self) -> int:
        return len(self.hf_tokenizer)

    def txt2vec(self, text: str, vec_type=list):
        ids = self.hf_tokenizer.encode(text, add_special_tokens=False)
        if vec_type in (list, tuple):
            return vec_type(ids)
        if vec_type is torch.Tensor or vec_type is torch.LongTensor:
            return torch.LongTensor(ids)
        return vec_type(ids)

    def vec2txt(self, vector, **kwargs) -> str:
        if hasattr(vector, "tolist"):
            vector = vector.tolist()
        return self.hf_tokenizer.decode(
            [int(i) for i in vector],
            skip_special_tokens=True,
            clean_up_tokenization_spaces=False,
        )

    def tokenize(self, text: str, building: bool = False) -> List[str]:
        return self.hf_tokenizer.tokenize(text)

    def act(self):
        return {}

    def share(self):
        shared = super().share()
        shared["hf_tokenizer"] = self.hf_tokenizer
        return shared

    def save(self, filename=None, append=False, sort=True) -> None:
        """
        A small JSON note; the tokenizer itself is saved in ``<model_file>.hf``.
        """
        filename = filename or self.opt.get("dict_file")
        if not filename:
            return
        os.makedirs(os.path.dirname(os.path.abspath(filename)), exist_ok=True)
        with open(filename, "w", encoding="utf-8") as f:
            json.dump(
                {
                    "dictionary": "parlai_docgraph.agents.gpt2_responder.dictionary:ResponderDictionaryAgent",
                    "responder_model": self.opt.get("responder_model"),
                    "size": len(self),
                },
                f,
            )
            f.write("\n")

    def load(self, filename: str) -> None:
        pass
