"""
Common base of the docgraph teachers: task-string options and bad-row reporting.
"""

from __future__ import annotations

from typing import Iterable, List, Optional, Sequence

from parlai.core.opt import Opt
from parlai.core.params import ParlaiParser
from parlai.core.teachers import DialogTeacher
from parlai.utils import logging

from .errors import BadRows


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

    def __init__(self, opt: Opt, shared=None) -> None:
        self.task_flags = self.parse_task_options(opt.get("task", ""))
        self.bad_rows = BadRows(skip=bool(opt.get("skip_bad_rows", False)))
        super().__init__(opt, shared)

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
