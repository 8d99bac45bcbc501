"""
A small CMU_DoG release written for the tests, in the release's layout
(``Conversations/{train,valid,test}/<id>.json``, ``WikiData/<movie>.json``; README.md aside),
with what the real data has that matters to the readers: a user's consecutive messages, a
speaker who did not see the article, section changes, the three ratings, a conversation
in two splits (ParlAI's build removes the duplicate), and articles 0 and 1 (ParlAI's
seen/unseen split holds every conversation about articles 1 and 3 out as "unseen"). The
movies and dialogues are invented; nothing is copied from the real data.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path
from typing import Dict, List, Tuple

MOVIES = {
    0: {
        "0": {
            "cast": ["Ada Brenner as Captain Iris Vale", "Tomas Reed as the ferry pilot"],
            "critical_response": ["A quiet storm of a film. It never raises its voice."],
            "director": "Mara Ellison",
            "genre": "drama",
            "introduction": "The Glass Harbour is a 1987 drama about a coastal town. "
                            "It follows a harbour master during one winter.",
            "movieName": "The Glass Harbour",
            "rating": ["Rotten Tomatoes: 91%", "IMDB: 7.4/10"],
            "year": "1987",
        },
        "1": "A storm wrecks the ferry near the old harbour. Iris pulls the pilot from the "
             "water. The town blames the lighthouse keeper.",
        "2": "Iris finds the keeper's logbook in the dunes. The log shows the lamp was lit. "
             "She suspects the harbour company.",
        "3": "At the inquiry Iris reads the log aloud. The company director resigns. The "
             "ferry sails again in spring.",
        "wikiDocumentIdx": 0,
    },
    1: {
        "0": {
            "cast": ["June Ostrow as Professor Hale"],
            "critical_response": ["Clever but cold."],
            "director": "Ben Carrow",
            "genre": "mystery",
            "introduction": "Salt and Chalk is a 2004 mystery set in a university.",
            "movieName": "Salt and Chalk",
            "rating": ["Metacritic: 64/100"],
            "year": "2004",
        },
        "1": "A chemistry exam goes missing the night before the finals. Hale questions "
             "her students one by one.",
        "2": "A chalk mark on the window points to the roof. Hale climbs up in the rain.",
        "3": "The thief is the night porter. Hale gives the exam anyway.",
        "wikiDocumentIdx": 1,
    },
}

#: (speaker, docIdx, text) of each conversation's messages
Script = List[Tuple[str, int, str]]

SCRIPTS: Dict[str, Script] = {
    "harbour_a": [
        ("user1", 0, "Hi! Have you seen The Glass Harbour?"),
        ("user1", 0, "It came out in 1987."),
        ("user2", 0, "No. Who directed it?"),
        ("user1", 0, "Mara Ellison directed it."),
        ("user2", 1, "What happens at the start?"),
        ("user1", 1, "A storm wrecks the ferry near the old harbour."),
        ("user2", 1, "Sounds exciting."),
        ("user2", 1, "I should watch it."),
        ("user1", 2, "ok, bye then"),
    ],
    "harbour_b": [
        ("user2", 0, "hello there"),
        ("user1", 0, "Hi, who is in it?"),
        ("user2", 0, "Ada Brenner plays Captain Iris Vale."),
        ("user1", 2, "Does she solve it?"),
        ("user2", 2, "She finds the keeper's logbook in the dunes."),
        ("user2", 2, "Then she suspects the company."),
    ],
    "harbour_c": [
        ("user1", 0, "Do you like dramas?"),
        ("user2", 0, "Yes, I like quiet ones."),
        ("user1", 3, "At the inquiry Iris reads the log aloud."),
        ("user2", 3, "That sounds like a good ending."),
    ],
    "chalk_a": [
        ("user1", 0, "Salt and Chalk is a mystery from 2004."),
        ("user2", 0, "Who is the director?"),
        ("user1", 0, "Ben Carrow is the director."),
        ("user2", 1, "What is it about?"),
        ("user2", 1, "Is it scary?"),
        ("user1", 1, "A chemistry exam goes missing before the finals."),
    ],
    "chalk_b": [
        ("user2", 0, "hey"),
        ("user1", 0, "hi! the thief is the night porter"),
        ("user2", 3, "no spoilers please"),
    ],
}
#: more conversations about article 0 (copies of harbour_c's script), so that ParlAI's seen
#: split (a random draw per conversation) gives train, valid and test seen some
EXTRA = [f"harbour_x{n:02d}" for n in range(16)]
#: split -> conversation ids ("harbour_a" is in train and test: ParlAI's dedup drops the copy)
SPLITS = {"train": ["harbour_a", "harbour_b", "chalk_a"] + EXTRA, "valid": ["harbour_c"],
          "test": ["harbour_a", "chalk_b"]}
WHO_SAW = {"harbour_a": ["user1", "user2"], "harbour_b": ["user2"], "harbour_c": ["user1", "user2"],
           "chalk_a": ["user1"], "chalk_b": ["user1", "user2"],
           **{cid: ["user1", "user2"] for cid in EXTRA}}
RATING = {"harbour_a": 3, "harbour_b": 2, "harbour_c": 1, "chalk_a": 2, "chalk_b": 1,
          **{cid: 2 for cid in EXTRA}}
WIKI = {"harbour_a": 0, "harbour_b": 0, "harbour_c": 0, "chalk_a": 1, "chalk_b": 1,
        **{cid: 0 for cid in EXTRA}}
SCRIPTS.update({cid: SCRIPTS["harbour_c"] for cid in EXTRA})


def conversation(cid: str) -> dict:
    history = [{"docIdx": doc, "text": text, "uid": uid, "utcTimestamp": f"2018-03-01T00:{i:02d}"}
               for i, (uid, doc, text) in enumerate(SCRIPTS[cid])]
    return {"date": "2018-03-01", "history": history, "rating": RATING[cid], "status": 1,
            "uid1LogInTime": "", "user1_id": "a", "user2_id": "b", "whoSawDoc": WHO_SAW[cid],
            "wikiDocumentIdx": WIKI[cid]}


def write_release(root: Path) -> Path:
    """The release's files under ``root`` (created); ``root``."""
    for split, ids in SPLITS.items():
        folder = root / "Conversations" / split
        folder.mkdir(parents=True)
        for cid in ids:
            (folder / f"{cid}.json").write_text(json.dumps(conversation(cid), indent=2))
    (root / "WikiData").mkdir()
    for idx, article in MOVIES.items():
        name = article["0"]["movieName"].replace(" ", "_")
        (root / "WikiData" / f"{name}.json").write_text(json.dumps(article, indent=2))
    (root / "README.md").write_text("fixture release\n")
    return root


def release_spec(root: Path, commit: str = "0" * 40):
    """The :class:`CmuDogRelease` of the files under ``root`` (no split-file checks)."""
    from parlai_docgraph.tasks.docgraph.install import CmuDogRelease, tree_digest

    files = {f"Conversations/{s}": len(ids) for s, ids in SPLITS.items()}
    files["WikiData"] = len(MOVIES)
    return CmuDogRelease(commit=commit, zip_sha256="-", digest=tree_digest(root), files=files,
                         built={})


def write_zip(root: Path, path: Path, folder: str) -> Path:
    """The files under ``root`` zipped inside ``folder/``, as GitHub's archive has them."""
    with zipfile.ZipFile(path, "w") as z:
        for file in sorted(p for p in root.rglob("*") if p.is_file()):
            z.write(file, f"{folder}/{file.relative_to(root).as_posix()}")
    return path


def install_fixture(datapath: Path, tmp: Path) -> Path:
    """The fixture release installed into ``datapath`` (``<datapath>/cmu_dog``)."""
    from parlai_docgraph.tasks.docgraph.install import install_cmu_dog

    root = write_release(tmp / "cmu_dog_release")
    install_cmu_dog(str(datapath), str(root), release_spec(root), log=lambda _: None)
    return datapath / "cmu_dog"


def digest_of(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
