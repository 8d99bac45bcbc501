"""
``parlai-docgraph datasets install NAME --from PATH``: a dataset's datapath layout built from
a local copy, for machines that cannot download (behind a firewall, offline).

* ``cmu_dog``: ``PATH`` is a git repository of festvox/datasets-CMU_DoG (a checkout or a
  bare mirror) holding commit :data:`~.build.CMU_DOG_COMMIT`, the GitHub zip of that commit
  (ParlAI's download), or a folder with the release's ``Conversations/`` and ``WikiData/``
  (such as that zip extracted). The files are checked (the commit's presence in a git
  repository, the zip's sha256 when it is ParlAI's, and always the file counts and a
  sha256 over the names and bytes of every data file), then ParlAI's own build steps
  (``parlai/tasks/cmu_dog/build.py``: ``move_unzipped_files_up``,
  ``consolidate_wiki_data``, ``consolidate_convos``, ``build_deduped_split``,
  ``split_into_seen_unseen``, ``mark_done``) lay out ``<datapath>/cmu_dog`` as ParlAI's
  download does, and each split file's conversations are checked (count and a sha256 of
  their sorted ids). ParlAI's steps read the conversation files in ``os.listdir`` order,
  which on ext4 follows a hash seeded per filesystem, and its seen/unseen split draws one
  random number per conversation in that order: the same download gives other test seen
  conversations on another machine. The install hands ParlAI's steps the names sorted
  (:class:`_SortedListing`), so every machine builds the same splits.
* ``wow`` (``wizard_of_wikipedia``): ``PATH`` is ``wizard_of_wikipedia.tgz`` (sha256
  checked, unpacked, marked built as ParlAI's build marks it) or a folder with the split
  files (copied; marked built only when every file of the archive is there).
* ``holle`` (``holl_e``): ``PATH`` is a folder with the official ``main_data`` files
  (``train_data.json``, ``dev_data.json``, ``test_data.json``) and
  ``multi_reference_test.json``; each is checked against its published sha256 where one
  is known.

Everything is built in a staging folder inside the datapath and moved into place last, so
an interrupted install leaves nothing that looks installed. Anything that does not check
out stops the install with :class:`InstallError`, saying what was found and what was
expected.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

from parlai_docgraph.atomic import sha256_of
from parlai_docgraph.tasks.docgraph.build import (
    CMU_DOG_COMMIT, CMU_DOG_URL, CMU_DOG_VERSION, RAW_FILES, WOW_URL,
)

Log = Callable[[str], None]
#: the build's split files from the release at :data:`~.build.CMU_DOG_COMMIT` (names
#: sorted): conversations and :func:`split_ids_digest`
BUILT_SPLITS: Dict[str, Tuple[int, str]] = {
    "train_deduped.json": (3265, "c699b0d02f04f72c"),
    "valid_deduped.json": (229, "289dcd8d8a47bf73"),
    "test_deduped.json": (617, "88ecb1181eaf532c"),
    "train_split_seen_unseen.json": (3254, "da9e68129ef68e9a"),
    "valid_split_seen_unseen.json": (452, "8cdb56e930c5a9f1"),
    "test_seen_split_seen_unseen.json": (198, "270b6c9e9cc205eb"),
    "test_unseen_split_seen_unseen.json": (207, "35ff86837a15ac64"),
}


class InstallError(RuntimeError):
    """A local copy that is not the dataset the install expects (the message says why)."""


@dataclass(frozen=True)
class CmuDogRelease:
    """What a copy of the CMU_DoG release must hold (tests pass a fixture's)."""

    commit: str = CMU_DOG_COMMIT
    #: the zip ParlAI downloads (``parlai/tasks/cmu_dog/build.py`` RESOURCES)
    zip_sha256: str = "f8ba8820cf86ee1c196b237b0cde80edba940e4ddea28c582830f6d098b3c769"
    #: sha256 over the sorted relative paths and bytes of Conversations/** and WikiData/**
    digest: str = "58c1e909439d813e22fa37889c7feb3c1d86337ada36a94870661e274e70bd8e"
    files: Dict[str, int] = field(default_factory=lambda: {
        "Conversations/train": 3373, "Conversations/valid": 229, "Conversations/test": 619,
        "WikiData": 30})
    #: per file of the build (de-duplicated and seen/unseen splits): its number of
    #: conversations and the first 16 hex digits of the sha256 of its sorted ids
    built: Dict[str, Tuple[int, str]] = field(default_factory=lambda: dict(BUILT_SPLITS))

    @property
    def folder(self) -> str:
        """The zip's top folder (ParlAI's ``UNZIPPED_PARENT_DIR``)."""
        return f"datasets-CMU_DoG-{self.commit}"


CMU_DOG = CmuDogRelease()


class _SortedListing:
    """The ``os`` module with ``listdir`` sorted, for ParlAI's build steps (module
    docstring); every other name is the real module's."""

    def __getattr__(self, name: str):
        return getattr(os, name)

    @staticmethod
    def listdir(path: str) -> List[str]:
        return sorted(os.listdir(path))


def split_ids_digest(ids) -> str:
    """The first 16 hex digits of the sha256 of the sorted conversation ids."""
    return hashlib.sha256("\n".join(sorted(ids)).encode()).hexdigest()[:16]
DATA_FOLDERS = ("Conversations", "WikiData")


def tree_digest(root: Path) -> str:
    """sha256 over the sorted relative paths and bytes of every file under the release's
    data folders (:data:`DATA_FOLDERS`) of ``root``."""
    digest = hashlib.sha256()
    files = sorted(p for p in root.rglob("*")
                   if p.is_file() and p.relative_to(root).parts[0] in DATA_FOLDERS)
    for path in files:
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def _is_git(path: Path) -> bool:
    return (path / ".git").exists() or ((path / "HEAD").is_file() and (path / "objects").is_dir())


def _git(path: Path, *args: str, **kwargs) -> subprocess.CompletedProcess:
    git_dir = path / ".git" if (path / ".git").exists() else path
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], check=False, **kwargs)


def _release_root(path: Path, folder: str) -> Optional[Path]:
    """``path`` or its ``folder`` child, whichever holds the data folders."""
    for root in (path, path / folder):
        if all((root / name).is_dir() for name in DATA_FOLDERS):
            return root
    return None


def _copy_release(source: Path, target: Path, release: CmuDogRelease, log: Log,
                  scratch: Path) -> None:
    """Put the release's files of ``source`` (git repository, zip, folder) under ``target``
    (``scratch``: a folder for intermediate files)."""
    if source.is_file():
        if not zipfile.is_zipfile(source):
            raise InstallError(f"{source}: not a zip file (expected the GitHub zip of "
                               f"{CMU_DOG_URL}, a git repository or a folder)")
        got = sha256_of(source)
        if got == release.zip_sha256:
            log(f"{source.name}: sha256 {got} is the one ParlAI's build pins")
        else:
            log(f"{source.name}: sha256 {got} is not the one ParlAI's build pins "
                f"({release.zip_sha256}); the files inside are checked instead")
        staging = scratch / "unzipped"
        with zipfile.ZipFile(source) as z:
            z.extractall(staging)
        root = _release_root(staging, release.folder)
        if root is None:
            raise InstallError(f"{source}: no {release.folder}/ with Conversations/ and "
                               f"WikiData/ inside")
        shutil.move(str(root), str(target))
    elif _is_git(source):
        if _git(source, "cat-file", "-e", f"{release.commit}^{{commit}}",
                capture_output=True).returncode != 0:
            raise InstallError(f"{source}: a git repository without commit {release.commit} "
                               f"(the one ParlAI's build pins); fetch it first")
        log(f"{source}: git repository holding commit {release.commit}; exporting its tree")
        target.mkdir(parents=True)
        archive = _git(source, "archive", "--format=tar", release.commit, capture_output=True)
        if archive.returncode != 0:
            raise InstallError(f"{source}: git archive failed: {archive.stderr.decode()[-300:]}")
        tar_path = scratch / "tree.tar"
        tar_path.write_bytes(archive.stdout)
        with tarfile.open(tar_path) as tar:
            tar.extractall(target, filter="data")
        tar_path.unlink()
    elif source.is_dir():
        root = _release_root(source, release.folder)
        if root is None:
            raise InstallError(f"{source}: no Conversations/ and WikiData/ in it (nor in "
                               f"{source / release.folder}); pass the release's folder")
        log(f"{source}: a folder (no git metadata): its files are checked")
        target.mkdir(parents=True)
        for name in DATA_FOLDERS:
            shutil.copytree(root / name, target / name)
    else:
        raise InstallError(f"{source}: no such file or folder")


def check_release(root: Path, release: CmuDogRelease) -> None:
    """The file counts and the content digest of an exported release (``InstallError``)."""
    problems = []
    for sub, want in release.files.items():
        got = len(list((root / sub).glob("*.json"))) if (root / sub).is_dir() else 0
        if got != want:
            problems.append(f"{sub}: {got} JSON files, expected {want}")
    digest = tree_digest(root)
    if digest != release.digest:
        problems.append(f"content sha256 {digest}, expected {release.digest} (the data of "
                        f"commit {release.commit})")
    if problems:
        raise InstallError("not the CMU_DoG release ParlAI pins:\n  " + "\n  ".join(problems))


def _check_built(dpath: Path, release: CmuDogRelease) -> None:
    from parlai_docgraph.tasks.docgraph.readers.cmu_dog import conversation_ids

    problems = []
    for name, (count, digest) in release.built.items():
        ids = conversation_ids(str(dpath / "conversations" / name))
        if (len(ids), split_ids_digest(ids)) != (count, digest):
            problems.append(f"conversations/{name}: {len(ids)} conversations (ids "
                            f"{split_ids_digest(ids)}), expected {count} ({digest})")
    if problems:
        raise InstallError("ParlAI's build gave other splits:\n  " + "\n  ".join(problems))


def _installed(dpath: Path, version: str, log: Log) -> bool:
    """Whether ``dpath`` carries ParlAI's built marker of ``version`` (said in the log); else
    its datapath is made, for the staging folder of a new install."""
    from parlai.core.build_data import built

    if built(str(dpath), version):
        log(f"{dpath} is installed already (ParlAI's marker, version {version})")
        return True
    dpath.parent.mkdir(parents=True, exist_ok=True)
    return False


def install_cmu_dog(datapath: str, source: str, release: CmuDogRelease = CMU_DOG,
                    log: Log = print) -> str:
    """Build ``<datapath>/cmu_dog`` from ``source`` (module docstring); its path."""
    from parlai.core.build_data import mark_done
    from parlai.tasks.cmu_dog import build as parlai_build

    dpath = Path(datapath) / "cmu_dog"
    if _installed(dpath, CMU_DOG_VERSION, log):
        return str(dpath)
    with tempfile.TemporaryDirectory(dir=datapath, prefix=".cmu_dog-install-") as tmp:
        build_dir = Path(tmp) / "cmu_dog"
        tree = build_dir / parlai_build.UNZIPPED_PARENT_DIR  # where its first step looks
        build_dir.mkdir()
        _copy_release(Path(source).expanduser(), tree, release, log, Path(tmp))
        check_release(tree, release)
        log(f"file counts {dict(release.files)} and content sha256 {release.digest} check out")
        real_os, parlai_build.os = parlai_build.os, _SortedListing()
        try:
            parlai_build.move_unzipped_files_up(str(build_dir))
            parlai_build.consolidate_wiki_data(str(build_dir))
            parlai_build.consolidate_convos(str(build_dir))
            parlai_build.build_deduped_split(str(build_dir))
            parlai_build.split_into_seen_unseen(str(build_dir))
        finally:
            parlai_build.os = real_os
        _check_built(build_dir, release)
        mark_done(str(build_dir), CMU_DOG_VERSION)
        if dpath.exists():
            shutil.rmtree(dpath)  # unfinished, or built by another version
        os.replace(build_dir, dpath)
    log(f"installed {dpath} (ParlAI's layout, version {CMU_DOG_VERSION}): "
        f"-t cmu_dog and -t docgraph:cmu_dog read it")
    return str(dpath)


# ---------------------------------------------------------------------------------------
# Wizard of Wikipedia and Holl-E

WOW_SHA256 = "2a549627a83fea745efa2076a41d1c0078ad002ab2b54eae6a4e3d3d66ae24b7"
WOW_VERSION = "1.0"
#: the archive's files (the split files the teachers read, and what ParlAI's own read)
WOW_FILES = ("train.json", "valid_random_split.json", "valid_topic_split.json",
             "test_random_split.json", "test_topic_split.json", "data.json",
             "topic_splits.json")


def _replace_folder(staged: Path, dpath: Path) -> None:
    if dpath.exists():
        shutil.rmtree(dpath)
    os.replace(staged, dpath)


def install_wow(datapath: str, source: str, log: Log = print) -> str:
    """``<datapath>/wizard_of_wikipedia`` from the archive or a folder (module docstring)."""
    from parlai.core.build_data import mark_done

    src = Path(source).expanduser()
    dpath = Path(datapath) / "wizard_of_wikipedia"
    if _installed(dpath, WOW_VERSION, log):
        return str(dpath)
    with tempfile.TemporaryDirectory(dir=datapath, prefix=".wow-install-") as tmp:
        staged = Path(tmp) / "wizard_of_wikipedia"
        staged.mkdir()
        if src.is_file():
            got = sha256_of(src)
            if got != WOW_SHA256:
                raise InstallError(f"{src}: sha256 {got}, expected {WOW_SHA256} "
                                   f"(the archive at {WOW_URL})")
            with tarfile.open(src) as tar:
                tar.extractall(staged, filter="data")
        elif src.is_dir():
            for name in WOW_FILES:
                if (src / name).is_file():
                    shutil.copy2(src / name, staged / name)
        else:
            raise InstallError(f"{src}: no such file or folder")
        present = [n for n in WOW_FILES if (staged / n).is_file()]
        missing = [n for n in WOW_FILES[:5] if n not in present]
        if missing:
            raise InstallError(f"{src}: missing {', '.join(missing)} (the split files of "
                               f"{WOW_URL})")
        complete = len(present) == len(WOW_FILES)
        if complete:
            mark_done(str(staged), WOW_VERSION)
        _replace_folder(staged, dpath)
    log(f"installed {dpath}: {', '.join(present)}" + (
        "" if complete else f"; not marked built (ParlAI's own teacher wants "
        f"{', '.join(n for n in WOW_FILES if n not in present)} too and would download the "
        f"archive; -t docgraph:wow reads the split files as they are)"))
    return str(dpath)


def install_holle(datapath: str, source: str, log: Log = print) -> str:
    """``<datapath>/holl_e`` from a folder of the official files (module docstring)."""
    src = Path(source).expanduser()
    if not src.is_dir():
        raise InstallError(f"{src}: not a folder (pass the folder holding the Holl-E files "
                           f"{', '.join(RAW_FILES['holl_e'])})")
    dpath = Path(datapath) / "holl_e"
    found: List[str] = []
    notes: List[str] = []
    for name, raw in RAW_FILES["holl_e"].items():
        path = src / name
        if not path.is_file():
            continue
        if raw.sha256 is not None:
            got = sha256_of(path)
            if got != raw.sha256:
                raise InstallError(f"{path}: sha256 {got}, expected {raw.sha256} "
                                   f"({raw.describe()})")
        else:
            notes.append(f"{name}: no published checksum, copied as it is")
        found.append(name)
    if not found:
        raise InstallError(f"{src}: none of {', '.join(RAW_FILES['holl_e'])}")
    dpath.mkdir(parents=True, exist_ok=True)
    for name in found:
        part = dpath / f".{name}.part"
        shutil.copy2(src / name, part)
        os.replace(part, dpath / name)
    missing = [n for n in RAW_FILES["holl_e"] if n not in found]
    log(f"installed into {dpath}: {', '.join(found)}"
        + (f"; still missing: {', '.join(missing)}" if missing else "")
        + "".join(f"\n  {n}" for n in notes))
    return str(dpath)


#: the names ``datasets install`` accepts -> installer
INSTALLERS: Dict[str, Callable[..., str]] = {
    "cmu_dog": install_cmu_dog, "wow": install_wow, "wizard_of_wikipedia": install_wow,
    "holle": install_holle, "holl_e": install_holle,
}


def install(name: str, datapath: str, source: str, log: Log = print) -> str:
    """Install dataset ``name`` from ``source`` into ``datapath`` (:data:`INSTALLERS`)."""
    if name not in INSTALLERS:
        raise InstallError(f"no installer for {name!r}; known: {', '.join(INSTALLERS)}")
    return INSTALLERS[name](datapath, source, log=log)
