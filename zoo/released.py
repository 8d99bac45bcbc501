"""
Released (downloaded) checkpoints: how ``zoo:docgraph/wow/model`` and
``zoo:docgraph/holle/model`` are fetched once they are published.

A :class:`Release` names one archive: its URL, its sha256, and a version. ``download``
uses ParlAI's :class:`~parlai.core.build_data.DownloadableFile` (download, sha256 check,
unpack) into ``<datapath>/models/docgraph/<name>/`` and then writes the ``.built`` marker
with the version, atomically and last; a folder with another version is replaced.

**Adding a checkpoint**: train it (``parlai train_model -m docgraph ... -mf M``), pack
``M``, ``M.opt``, ``M.selector*`` and ``M.responder*`` into ``model.tgz`` (``tar czf``), upload
it, compute ``sha256sum model.tgz``, and fill in ``url`` and ``sha256`` of the entry below
(bump ``version`` whenever the archive changes); add its figures to ``model_list.py``.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from typing import Optional

from parlai_docgraph.env import offline
from parlai_docgraph.zoo.recipe import is_built, mark_built


class NotReleasedYet(RuntimeError):
    """A zoo name whose checkpoint has not been published."""


@dataclass(frozen=True)
class Release:
    name: str  # zoo:docgraph/<name>/model
    version: str
    url: Optional[str] = None
    sha256: Optional[str] = None
    archive: str = "model.tgz"


WOW = Release("wow", "v1")
HOLLE = Release("holle", "v1")


def download(datapath: str, release: Release) -> str:
    """The model file of ``release`` under ``datapath`` (downloaded and checked if needed)."""
    folder = os.path.join(datapath, "models", "docgraph", release.name)
    model_file = os.path.join(folder, "model")
    if is_built(folder, release.version):
        return model_file
    if release.url is None or release.sha256 is None:
        raise NotReleasedYet(
            f"zoo:docgraph/{release.name}/model is not released yet: no checkpoint has been "
            f"published. Train one with `parlai train_model -m docgraph -t "
            f"docgraph:{release.name} -mf <file>` and pass -mf <file>, or use "
            f"zoo:docgraph/sample/model (built offline on first use)")
    if offline():
        raise RuntimeError(
            f"zoo:docgraph/{release.name}/model is not in {folder} and downloads are off "
            f"(offline mode): fetch {release.url} (sha256 {release.sha256}) elsewhere, unpack "
            f"it into {folder} and write the version {release.version!r} on the 2nd line of "
            f"{folder}/.built")
    from parlai.core.build_data import DownloadableFile

    if os.path.isdir(folder):
        shutil.rmtree(folder)
    os.makedirs(folder)
    DownloadableFile(release.url, release.archive, release.sha256, zipped=True).download_file(
        folder)
    mark_built(folder, release.version)
    return model_file
