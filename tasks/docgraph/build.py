"""
Where each dataset's raw files live under ``--datapath``, and how they get there.

Files are read from where the official builds put them: Wizard of Wikipedia reuses
ParlAI's own build (``<datapath>/wizard_of_wikipedia/`` and its ``.built`` marker); the
others keep their official file names under ``<datapath>/holl_e/``,
``<datapath>/opendialkg/`` and ``<datapath>/komodis/``. A file already in place is used
as is (a pre-populated datapath works offline). Otherwise it is downloaded with ParlAI's
helpers (sha256-checked where the checksum is known), unless downloads are off
(``PARLAI_DOCGRAPH_OFFLINE``, ``HF_HUB_OFFLINE`` or ``TRANSFORMERS_OFFLINE`` set), in which case
:class:`MissingDatasetFile` says which file, where, and the official URL.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Dict, Optional

from parlai_docgraph.atomic import sha256_of  # noqa: F401  (re-exported for the readers)
from parlai_docgraph.env import offline

from parlai_docgraph.dataset_errors import MissingDatasetFile

SAMPLE_DATAPATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sample_data")


@dataclass(frozen=True)
class RawFile:
    """
    One official raw file: its URL (or Google Drive id) and sha256 when published.
    """

    url: str
    sha256: Optional[str] = None
    from_google: bool = False
    #: False when the source is a page or folder, not a file we can fetch
    downloadable: bool = True

    def describe(self) -> str:
        if self.from_google:
            return f"https://drive.google.com/uc?id={self.url} (Google Drive)"
        return self.url


WOW_URL = "http://parl.ai/downloads/wizard_of_wikipedia/wizard_of_wikipedia.tgz"

#: folder under the datapath -> official file name -> source
RAW_FILES: Dict[str, Dict[str, RawFile]] = {
    "holl_e": {
        "train_data.json": RawFile(
            "1XLrXU2_64FBVt3-3UwdprdyAGXOIc8ID",
            "ab16ea1ba3227d8f78e5b76e0a6bc7a06d4155ce2ebc09ff96f614eadb92022a",
            from_google=True,
        ),
        "test_data.json": RawFile(
            "1hSGhG0HyZSvwU855R4FsnDRqxLursPmi",
            "5bf7fe251fdf7a6ab16ea7a73a5ae54631384f50a6c17eff3b27b16fa4e9fb81",
            from_google=True,
        ),
        "multi_reference_test.json": RawFile(
            "1BIQ8VbXdndRSDaCkPEruaVv_8WegWeok",
            "e53dac184fba2969ea606b1ec4c8b4297f443551d588ba3156b032e489938188",
            from_google=True,
        ),
        # The official release's main_data/dev_data.json (Google Drive folder
        # 1xQBRDs5q_2xLOdOpbq7UeAmUM0Ht370A); no stable file id or checksum is published.
        "dev_data.json": RawFile(
            "https://drive.google.com/drive/folders/1xQBRDs5q_2xLOdOpbq7UeAmUM0Ht370A "
            "(main_data/dev_data.json)",
            downloadable=False,
        ),
    },
    "opendialkg": {
        "opendialkg.csv": RawFile(
            "https://github.com/facebookresearch/opendialkg/raw/main/data/opendialkg.csv"
        ),
        "opendialkg_triples.txt": RawFile(
            "https://github.com/facebookresearch/opendialkg/raw/main/data/opendialkg_triples.txt"
        ),
        "opendialkg_entities.txt": RawFile(
            "https://github.com/facebookresearch/opendialkg/raw/main/data/opendialkg_entities.txt",
            "6ada96862e3289c5fcbe572374a97db96f08ebbb2e0797a86cfe23a7dfa37573",
        ),
        "opendialkg_relations.txt": RawFile(
            "https://github.com/facebookresearch/opendialkg/raw/main/data/opendialkg_relations.txt",
            "408a547dcaf008ee18141e7cb59643e6a6a5850b81bcb9375cc8db35b057f5a3",
        ),
    },
    "komodis": {
        "dataset.json": RawFile(
            "https://github.com/fabiangal/komodis-dataset/raw/master/data/dataset.json"
        ),
    },
}


def downloads_allowed() -> bool:
    """
    False when the environment asks for offline operation (:func:`parlai_docgraph.env.offline`).
    """
    return not offline()


def _download(raw: RawFile, folder: str, fname: str) -> None:
    import parlai.core.build_data as build_data  # ParlAI glue only when downloading

    os.makedirs(folder, exist_ok=True)
    tmp = fname + ".part"
    if raw.from_google:
        build_data.download_from_google_drive(raw.url, os.path.join(folder, tmp))
    else:
        build_data.download(raw.url, folder, tmp)
    got = sha256_of(os.path.join(folder, tmp))
    if raw.sha256 is not None and got != raw.sha256:
        os.remove(os.path.join(folder, tmp))
        raise IOError(f"checksum mismatch for {fname}: {got} != {raw.sha256}")
    os.replace(os.path.join(folder, tmp), os.path.join(folder, fname))


def raw_file(datapath: str, dataset: str, fname: str) -> str:
    """
    Path of an official raw file, downloading it when missing and allowed.

    :raises MissingDatasetFile: when the file is absent and cannot be fetched.
    """
    folder = os.path.join(datapath, dataset)
    path = os.path.join(folder, fname)
    if os.path.isfile(path):
        return path
    raw = RAW_FILES[dataset][fname]
    if not raw.downloadable:
        raise MissingDatasetFile(
            dataset, path, raw.describe(), how="This file has no direct download link."
        )
    if not downloads_allowed():
        raise MissingDatasetFile(dataset, path, raw.describe())
    try:
        _download(raw, folder, fname)
    except Exception as e:  # network errors of every flavour: say what to do instead
        raise MissingDatasetFile(dataset, path, raw.describe(), how=f"Download failed: {e}")
    return path


def wow_file(datapath: str, fname: str) -> str:
    """
    Path of a Wizard of Wikipedia split file, using ParlAI's build when missing.
    """
    folder = os.path.join(datapath, "wizard_of_wikipedia")
    path = os.path.join(folder, fname)
    if os.path.isfile(path):
        return path
    how = (
        f"ParlAI's build downloads and extracts it (about 1 GB) into {folder}; "
        f"or extract wizard_of_wikipedia.tgz (sha256 "
        f"2a549627a83fea745efa2076a41d1c0078ad002ab2b54eae6a4e3d3d66ae24b7) there yourself."
    )
    if not downloads_allowed():
        raise MissingDatasetFile("wizard_of_wikipedia", path, WOW_URL, how=how)
    try:
        from parlai.tasks.wizard_of_wikipedia.build import build

        build({"datapath": datapath})
    except Exception as e:
        raise MissingDatasetFile(
            "wizard_of_wikipedia", path, WOW_URL, how=f"{how}\n  Download failed: {e}"
        )
    if not os.path.isfile(path):
        raise MissingDatasetFile("wizard_of_wikipedia", path, WOW_URL, how=how)
    return path


#: what ParlAI's cmu_dog build downloads (``parlai/tasks/cmu_dog/build.py``): the GitHub
#: archive of festvox/datasets-CMU_DoG at this commit
CMU_DOG_COMMIT = "618a14f27546165859305649aa84e6ac8710bb63"
CMU_DOG_URL = f"https://github.com/festvox/datasets-CMU_DoG/archive/{CMU_DOG_COMMIT}.zip"
CMU_DOG_VERSION = "1.2"


def cmu_dog_folder(datapath: str) -> str:
    """
    ``<datapath>/cmu_dog``, built by ParlAI's build (marker version 1.2): when it is not,
    ParlAI's build downloads it if downloads are allowed; offline, the error names
    ``parlai-docgraph datasets install cmu_dog --from DIR_OR_ZIP``.
    """
    from parlai.core.build_data import built

    folder = os.path.join(datapath, "cmu_dog")
    if built(folder, CMU_DOG_VERSION):
        return folder
    how = (f"Install it from a local copy (a checkout of festvox/datasets-CMU_DoG at "
           f"{CMU_DOG_COMMIT}, or that commit's zip):\n"
           f"    parlai-docgraph datasets install cmu_dog --from DIR_OR_ZIP "
           f"--datapath {datapath}")
    marker = os.path.join(folder, ".built")
    if not downloads_allowed():
        raise MissingDatasetFile("cmu_dog", marker, CMU_DOG_URL, how=how)
    try:
        from parlai.tasks.cmu_dog.build import build

        build({"datapath": datapath})
    except Exception as e:  # network errors of every flavour: say what to do instead
        raise MissingDatasetFile("cmu_dog", marker, CMU_DOG_URL, how=f"{how}\n  Download failed: {e}")
    return folder
