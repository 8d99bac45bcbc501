"""
Common base of the docgraph teachers: task-string options and bad-row reporting.
"""

from __future__ import annotations

import hashlib
import os
from typing import Iterable, List, Optional, Sequence

from parlai.core.opt import Opt
from parlai.core.params import ParlaiParser
from parlai.core.teachers import DialogTeacher
from parlai.utils import logging

from parlai_docgraph.dataset_errors import BadRows


class DocgraphDialogTeacher(DialogTeacher):
    """
    A ``DialogTeacher`` whose raw reader reports malformed rows by file and line.

    Subclasses declare ``TASK_OPTIONS`` (the words allowed after ``docgraph:<name>:``)
    and implement ``setup_data``.
    """

    #: words accepted after ``docgraph:<teacher>:``; the first of each group is default
    TASK_OPTIONS: Sequence[Sequence[str]] = ()

    @classmethod
    def add_cmdline_args(
        cls, parser: ParlaiParser, partial_opt: Optional[Opt] = None
    ) -> ParlaiParser:
        super().add_cmdline_args(parser, partial_opt)
        group = parser.add_argument_group("docgraph dataset")
        group.add_argument(
            "--skip-bad-rows",
            type="bool",
            default=False,
            help="skip malformed rows of the raw files (each is counted and its file and "
            "line logged) instead of stopping at the first one",
        )
        return parser

    #: bump when a reader change alters example counts, to retire cached lengths
    LENGTHS_VERSION = 1

    def __init__(self, opt: Opt, shared=None) -> None:
        self.task_flags = self.parse_task_options(opt["task"])
        self.bad_rows = BadRows(skip=bool(opt["skip_bad_rows"]))
        if opt.get("datafile") and not opt.get("length_datafile"):
            opt = Opt(opt)
            opt["length_datafile"] = self.length_cache_path(opt)
        super().__init__(opt, shared)

    def count_options(self) -> tuple:
        """
        Options that change how many examples a file yields (part of the lengths key).
        """
        return (tuple(self.task_flags), self.bad_rows.skip)

    def length_cache_path(self, opt: Opt) -> str:
        """
        Where ParlAI's streaming mode caches episode/example counts.

        ParlAI writes ``<datafile>.lengths`` beside the data and trusts it forever, which
        goes stale when the file or a count-changing option changes, and writes into the
        installed package for bundled samples. The key here covers the file's identity
        and size/mtime, the options and a version, under ``<datapath>/docgraph_cache``.
        """
        files = opt["datafile"] if isinstance(opt["datafile"], (list, tuple)) else [opt["datafile"]]
        parts = [type(self).__name__, str(self.LENGTHS_VERSION), repr(self.count_options())]
        for path in files:
            stat = os.stat(path)
            parts += [os.path.abspath(path), str(stat.st_size), str(stat.st_mtime_ns)]
        key = hashlib.sha256("\0".join(parts).encode()).hexdigest()[:20]
        folder = os.path.join(opt["datapath"], "docgraph_cache", "lengths")
        os.makedirs(folder, exist_ok=True)
        return os.path.join(folder, f"{type(self).__name__}-{key}.lengths")

    @classmethod
    def parse_task_options(cls, task: str) -> List[str]:
        """
        Return the chosen word of each ``TASK_OPTIONS`` group from the task string.

        ``docgraph:wow:topic_split`` -> ``['topic_split']``.
        """
        words = [w for w in task.split(":")[2:] if w]
        chosen = [group[0] for group in cls.TASK_OPTIONS]
        for word in words:
            for g, group in enumerate(cls.TASK_OPTIONS):
                if word in group:
                    chosen[g] = word
                    break
            else:
                allowed = ", ".join(w for group in cls.TASK_OPTIONS for w in group) or "none"
                raise ValueError(
                    f"unknown option '{word}' in task '{task}' (allowed: {allowed})"
                )
        return chosen

    def log_bad_rows(self) -> None:
        if self.bad_rows.errors:
            logging.warning(f"{self.__class__.__name__}: {self.bad_rows.summary()}")

    def iterate_with_report(self, episodes: Iterable) -> Iterable:
        """
        Pass ``episodes`` through and log the bad-row summary once they are exhausted.
        """
        yield from episodes
        self.log_bad_rows()
