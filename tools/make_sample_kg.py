"""
Generate the bundled OpenDialKG-format sample (``docgraph:sample_kg``):
``tasks/docgraph/sample_data/opendialkg/opendialkg.csv`` and ``.../opendialkg_triples.txt``.

Written for parlai-docgraph by the project (licence: CC BY 4.0, © the parlai-docgraph
authors): the facts below are hand-authored common knowledge about films and books, the
dialogues are templated from them; no row, line or sentence is copied from the
OpenDialKG release. Entity and relation names follow the official KG's spelling styles
(``starred_actors``, ``~starred_actors``, ``Produced by``, ``Award Won``, ``is-a``,
disambiguated titles such as ``The Shining (Horror Film)``).

The KG holds each fact in both directions, as the official file does: ``s<TAB>r<TAB>o``
and ``o<TAB>~r<TAB>s``. Each dialogue walks the KG: a ``kgwalk/choose_path`` action of
1-2 triples starts at an entity the dialogue already mentioned and precedes the chat
message (same sender) that mentions every entity of the walk.

    python tools/make_sample_kg.py           # rewrite the files
    python tools/make_sample_kg.py --check   # exit 1 if they differ

It also writes ``.../opendialkg/path_odds.json``: the probability of each assistant walk under
this generator, given the dialogue so far. The walks are drawn at random among the focus
entity's edges, so no retriever can rank the drawn walk first more often than ``best@1``
says; ``parlai-docgraph bench --only kg_ceiling`` averages it over a split.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import random
import re
import sys
from typing import Dict, List, Optional, Sequence, Tuple

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tasks",
                    "docgraph", "sample_data")
OUT_DIR = os.path.join(HERE, "opendialkg")
SEED = 20240607
NUM_DIALOGUES = 60
ODDS_NAME = "path_odds.json"

Triple = Tuple[str, str, str]

# --------------------------------------------------------------------------------------
# facts (tasks/docgraph/sample_data/source/kg_facts.json), authored by the project:
# FILMS: title -> [year, directors, writers, actors, genres, music, language, extra]
# BOOKS: title -> [year, authors, genres, extra]; PEOPLE: person -> {relation: [objects]}
# --------------------------------------------------------------------------------------

with open(os.path.join(HERE, "source", "kg_facts.json"), encoding="utf-8") as _f:
    _FACTS = json.load(_f)
FILMS: Dict[str, list] = _FACTS["FILMS"]
BOOKS: Dict[str, list] = _FACTS["BOOKS"]
PEOPLE: Dict[str, Dict[str, List[str]]] = _FACTS["PEOPLE"]


def forward_facts() -> List[Triple]:
    """
    Every hand-authored fact once, in its forward direction, de-duplicated in order.
    """
    facts: List[Triple] = []
    for title, (year, directors, writers, actors, genres, music, lang, extra) in FILMS.items():
        facts += [(title, "starred_actors", a) for a in actors]
        facts += [(title, "directed_by", d) for d in directors]
        facts += [(title, "written_by", w) for w in writers]
        facts += [(title, "has_genre", g) for g in genres]
        facts += [(title, "music_by", m) for m in music]
        facts += [(title, "release_year", year), (title, "in_language", lang), (title, "is-a", "Film")]
        for rel, objs in extra.items():
            facts += [(title, rel, o) for o in objs]
    for title, (year, authors, genres, extra) in BOOKS.items():
        facts += [(title, "written_by", a) for a in authors]
        facts += [(title, "has_genre", g) for g in genres]
        facts += [(title, "release_year", year), (title, "is-a", "Book")]
        for rel, objs in extra.items():
            facts += [(title, rel, o) for o in objs]
        if "in_language" not in extra:
            facts.append((title, "in_language", "English Language"))
    for person, rels in PEOPLE.items():
        for rel, objs in rels.items():
            facts += [(person, rel, o) for o in objs]
    return list(dict.fromkeys(facts))


def all_triples(facts: Sequence[Triple]) -> List[Triple]:
    """
    Both directions of each fact, grouped by subject (sorted), as the KG file lists them.
    """
    both = list(facts) + [(o, "~" + r, s) for s, r, o in facts]
    return sorted(dict.fromkeys(both), key=lambda t: (t[0].lower(), t[0], t[1], t[2]))


# --------------------------------------------------------------------------------------
# language
# --------------------------------------------------------------------------------------

CLASSES = {"Film", "Book", "Actor", "Film director", "Author"}


def surface(entity: str) -> str:
    """
    How a chat message names an entity: without the KG's disambiguation suffix.
    """
    return re.sub(r" \([^()]*\)$", "", entity)


def _name(entity: str) -> str:
    if entity in CLASSES:
        return entity.lower()
    return surface(entity).replace(" Language", "")


# forward relation -> ways to state "s r o"
FACT = {
    "starred_actors": ["{o} starred in {s}", "{s} stars {o}", "{o} has a big role in {s}"],
    "directed_by": ["{s} was directed by {o}", "{o} directed {s}"],
    "written_by": ["{s} was written by {o}", "{o} wrote {s}"],
    "has_genre": ["{s} is usually filed under {o}", "the genre of {s} is {o}", "{s} counts as {o}"],
    "music_by": ["{o} composed the score of {s}", "the music of {s} is by {o}"],
    "release_year": ["{s} came out in {o}", "{s} was released in {o}"],
    "in_language": ["{s} is in {o}", "the original language of {s} is {o}"],
    "is-a": ["{s} is a {o}"],
    "Produced by": ["{s} was produced by {o}", "{o} produced {s}"],
    "Adapted From": ["{s} is based on {o}", "{s} was adapted from {o}"],
    "Sequel": ["{o} is the sequel to {s}", "{s} was followed by {o}"],
    "Award Won": ["{s} won the {o}", "{s} has won an {o}"],
    "Country of nationality": ["{s} is from {o}", "{s} has {o} nationality"],
    "Place of birth": ["{s} was born in {o}"],
    "Spouse (or domestic partner)": ["{s} is married to {o}"],
}

RENDER = {
    "starred_actors": ("{s} is starring {o}", "{s} starred in {o}"),
    "directed_by": ("{s} is directed by {o}", "{s} directed {o}"),
    "written_by": ("{s} is written by {o}", "{s} wrote {o}"),
    "has_genre": ("{s} has genre {o}", "{s} has examples: {o}"),
    "release_year": ("{s} was released {o}", "{s} : `~release_year`: {o}"),
}


def render_path(triples: Sequence[Triple]) -> str:
    parts = []
    for s, r, o in triples:
        base = r[1:] if r.startswith("~") else r
        if base in RENDER:
            parts.append(RENDER[base][r.startswith("~")].format(s=s, o=o))
        else:
            parts.append(f"{s} : `{r}`: {o}")
    return ". ".join(parts)


def state(rng: random.Random, triple: Triple) -> str:
    s, r, o = triple
    if r.startswith("~"):
        r, s, o = r[1:], o, s
    return rng.choice(FACT[r]).format(s=_name(s), o=_name(o))


def capital(text: str) -> str:
    return text[:1].upper() + text[1:]


ASSISTANT_PRE = ["", "Sure!", "Yes.", "Good choice.", "Oh, I know that one.", "Definitely.", "Great question."]
ASSISTANT_POST = ["", "Have you seen it?", "Would you like more like that?", "It is worth a look.", "Do you want another suggestion?", "I think you would enjoy it."]
USER_PRE = ["", "Cool.", "Oh nice!", "I see.", "Interesting.", "Ah, I remember now."]
USER_POST = ["", "Right?", "Is that true?", "What else can you tell me?", "I might check that out."]
USER_IDLE = ["I haven't seen that one yet.", "Interesting, tell me more.", "Oh really? I didn't know that.", "Nice, what else?", "That sounds good.", "Hmm, I am not sure I would like that."]
ASSISTANT_IDLE = ["It is one of my favorites.", "I think you would like it.", "It has very good reviews.", "A lot of people recommend it.", "It is a classic at this point."]
USER_BYE = ["Thanks, I will add {e} to my list!", "Great, I'll look for {e} this weekend.", "Thank you, {e} it is then.", "Thanks for the tips about {e}!"]
ASSISTANT_BYE = ["You're welcome, enjoy {e}!", "Happy to help, have fun with {e}.", "Anytime! Let me know how you like {e}.", "Enjoy {e}, and have a nice day!"]
OPENERS = {
    "film": ["Do you like {e}?", "Could you recommend a movie like {e}?", "I just watched {e}, what should I watch next?", "What do you know about {e}?"],
    "book": ["Could you recommend any books like {e}?", "Have you read {e}?", "I loved {e}, any suggestions?", "What can you tell me about {e}?"],
    "person": ["Do you like {e}?", "I am a big fan of {e}.", "What do you think of {e}?", "Can you tell me something about {e}?"],
}
ASSISTANT_OPENERS = ["Hi! Are you looking for a movie or a book today?", "Hello! What kind of stories do you enjoy?", "Hey there, need a recommendation?"]
SPLIT_LEAD = {"assistant": ["Hmm, let me think.", "Oh!", "Good one."], "user": ["Wow.", "Ha, yes.", "Okay."]}
META = [("give me a moment to look that up", "sure, take your time"), ("I need a little more time please", "no problem"), ("please end the chat when you are ready", "okay")]
SCORES = [0.0, 1.0, -0.5, 3.0, -1, -2, 2, 0.5, 1.5, -1.5]

NO_INTERMEDIATE = {"is-a", "~is-a", "in_language", "~in_language"}
NO_HOP = {"~is-a", "~in_language"}  # hub fan-out (every film is-a Film): never walk back
#: the share of walks drawn with two hops
TWO_HOP = 0.35


class Walker:
    """Draws the dialogues' KG walks; :meth:`odds` states the distribution :meth:`path` draws
    from, so the data says how predictable each gold path is (``path_odds.json``)."""

    def __init__(self, triples: Sequence[Triple]) -> None:
        self.out: Dict[str, List[Triple]] = {}
        for t in triples:
            if t[1] not in NO_HOP:
                self.out.setdefault(t[0], []).append(t)

    def _edges(self, start: str, said: set) -> List[Triple]:
        return [t for t in self.out.get(start, []) if surface(t[2]) not in said]

    def _seconds(self, start: str, first: Triple, said: set) -> List[Triple]:
        """The second hops after ``first`` (none when ``first`` may not be a middle hop)."""
        if first[1] in NO_INTERMEDIATE:
            return []
        return [t for t in self.out.get(first[2], [])
                if surface(t[2]) not in said and surface(t[2]) != surface(start)]

    def path(self, rng: random.Random, start: str, used: set, hops: int) -> Optional[List[Triple]]:
        said = {surface(e) for e in used}
        edges = self._edges(start, said)
        rng.shuffle(edges)
        for first in edges:
            if hops == 1:
                return [first]
            seconds = self._seconds(start, first, said)
            if seconds:
                return [first, rng.choice(seconds)]
        return None

    def odds(self, start: str, used: set) -> Dict[Tuple[Triple, ...], float]:
        """
        P(walk | a walk is drawn) from ``start``, as :func:`make_dialogue` draws it: two hops
        with probability :data:`TWO_HOP`, the first hop uniform over the edges that can lead
        on (each second hop uniform after it), else one hop uniform over :meth:`_edges`. Where
        no edge leads on, a two-hop draw gives no walk, so every walk is one hop.
        """
        said = {surface(e) for e in used}
        edges = self._edges(start, said)
        if not edges:
            return {}
        leads = {first: self._seconds(start, first, said) for first in edges}
        leads = {first: seconds for first, seconds in leads.items() if seconds}
        one = 1.0 - TWO_HOP if leads else 1.0
        out: Dict[Tuple[Triple, ...], float] = {(first,): one / len(edges) for first in edges}
        for first, seconds in leads.items():
            for second in seconds:
                out[(first, second)] = TWO_HOP / len(leads) / len(seconds)
        return out


def walk_odds(odds: Dict[Tuple[Triple, ...], float], triples: List[Triple]) -> dict:
    """One drawn walk and how predictable it was: its probability ``p`` and the summed
    probability of the ``k`` likeliest walks (``best@k``: the chance that the best possible
    ranking of walks has the drawn one in its top ``k``)."""
    ranked = sorted(odds.values(), reverse=True)
    return {"path": [list(t) for t in triples], "p": round(odds[tuple(triples)], 6),
            "best@1": round(sum(ranked[:1]), 6), "best@3": round(sum(ranked[:3]), 6)}


def kind_of(entity: str) -> str:
    return "film" if entity in FILMS else "book" if entity in BOOKS else "person"


def chat(sender: str, message: str) -> dict:
    return {"message": message, "type": "chat", "sender": sender}


def path_action(sender: str, score, triples: List[Triple]) -> dict:
    return {
        "metadata": {"path": [score, [list(t) for t in triples], render_path(triples)]},
        "type": "action",
        "sender": sender,
        "action_id": "kgwalk/choose_path",
    }


def meta(sender: str, text: str) -> dict:
    return {"metadata": {"text": text}, "type": "action", "sender": sender, "action_id": "meta_thread/send_meta_message"}


def grounded_message(rng: random.Random, sender: str, triples: List[Triple]) -> str:
    facts = [state(rng, t) for t in triples]
    body = capital(facts[0]) + (f", and {facts[1]}" if len(facts) > 1 else "") + "."
    pre, post = (ASSISTANT_PRE, ASSISTANT_POST) if sender == "assistant" else (USER_PRE, USER_POST)
    return " ".join(x for x in (rng.choice(pre), body, rng.choice(post)) if x)


def make_dialogue(rng: random.Random, walker: Walker, start: str, n: int,
                  odds: Optional[List[dict]] = None) -> List[dict]:
    """
    One session starting from ``start``; the assistant opens every 12th dialogue. Each
    assistant walk's odds (:func:`walk_odds`) are appended to ``odds`` when given.
    """
    actions: List[dict] = []
    n_turns = rng.randint(4, 8)
    assistant_first = n % 12 == 7
    senders = ["assistant", "user"] if assistant_first else ["user", "assistant"]
    focus = start
    used = {start}
    n_chat = 0
    meta_at = rng.randrange(1, n_turns) if n % 5 == 2 else -1
    last_work = start
    for k in range(n_turns):
        sender = senders[k % 2]
        if k == meta_at:
            a, b = META[n % len(META)]
            other = "user" if sender == "assistant" else "assistant"
            actions += [meta(sender, a), meta(other, b)]
        if k == 0:
            if assistant_first:
                actions.append(chat(sender, rng.choice(ASSISTANT_OPENERS)))
            else:
                actions.append(chat(sender, rng.choice(OPENERS[kind_of(start)]).format(e=surface(start))))
            n_chat += 1
            continue
        if assistant_first and k == 1:
            actions.append(chat(sender, rng.choice(OPENERS[kind_of(start)]).format(e=surface(start))))
            n_chat += 1
            continue
        last = k == n_turns - 1
        first_reply = k == (2 if assistant_first else 1)
        p_path = 1.0 if first_reply else 0.8 if sender == "assistant" else 0.45
        triples = None
        if not last and rng.random() < p_path:
            triples = walker.path(rng, focus, used, 2 if rng.random() < TWO_HOP else 1)
        if triples:
            if odds is not None and sender == "assistant":
                odds.append(walk_odds(walker.odds(focus, used), triples))
            score = SCORES[(n + k) % len(SCORES)]
            actions.append(path_action(sender, score, triples))
            text = grounded_message(rng, sender, triples)
            for t in triples:
                used.add(t[2])
            tail = triples[-1][2]
            # a walk ending at a class or a language goes on from its last subject
            focus = triples[-1][0] if tail in CLASSES or "Language" in tail or tail == "French" else tail
            works = [e for t in triples for e in (t[0], t[2]) if e in FILMS or e in BOOKS]
            last_work = works[-1] if works else last_work
        elif last:
            bye = USER_BYE if sender == "user" else ASSISTANT_BYE
            text = rng.choice(bye).format(e=_name(last_work))
        else:
            text = rng.choice(ASSISTANT_IDLE if sender == "assistant" else USER_IDLE)
        split = n_chat + 2 <= 10 and rng.random() < 0.15
        if split:
            actions.insert(len(actions) - (1 if triples and n % 2 else 0), chat(sender, rng.choice(SPLIT_LEAD[sender])))
            n_chat += 1
        actions.append(chat(sender, text))
        n_chat += 1
        if n_chat >= 10:
            break
    return actions


def starts(rng: random.Random) -> List[str]:
    films = list(FILMS)
    books = list(BOOKS)
    people = [p for p in PEOPLE if p in {a for f in FILMS.values() for a in f[3] + f[1]}]
    rng.shuffle(films), rng.shuffle(books), rng.shuffle(people)
    out = []
    while len(out) < NUM_DIALOGUES:
        for pool in (films, books, films, people):
            out.append(pool[len(out) % len(pool)])
    return out[:NUM_DIALOGUES]


def build() -> Tuple[str, str, str]:
    """The CSV, the KG file and ``path_odds.json`` (per CSV row, the odds of each assistant
    walk, in order: what bounds any retriever's path@k on this data)."""
    rng = random.Random(SEED)
    facts = forward_facts()
    triples = all_triples(facts)
    walker = Walker(triples)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["Messages", "User Rating", "Assistant Rating"])
    rows: List[List[dict]] = []
    for n, start in enumerate(starts(rng)):
        rows.append([])
        actions = make_dialogue(rng, walker, start, n, rows[-1])
        ratings = []
        for _ in range(2):
            d = str(rng.choice([3, 4, 5, 5, 5]))
            o = str(rng.choice([4, 5, 5]))
            ratings.append(json.dumps({"dialog_rating": d, "other_agent_rating": o}))
        writer.writerow([json.dumps(actions, ensure_ascii=False)] + ratings)
    kg = "".join(f"{s}\t{r}\t{o}\n" for s, r, o in triples)
    about = ("Per row of opendialkg.csv, each assistant KG walk in order: p is its probability "
             "under the generator (tools/make_sample_kg.py, Walker.odds) given the dialogue so "
             "far, best@k the summed probability of the k likeliest walks.")
    odds = json.dumps({"about": about, "two_hop": TWO_HOP, "rows": rows}, ensure_ascii=False, indent=1)
    return buf.getvalue(), kg, odds + "\n"


def verify(csv_text: str, kg_text: str) -> List[str]:
    """
    Problems with the generated data: path triples missing from the KG, path entities
    the grounded message does not mention, chat-message counts out of 4..10.
    """
    kg = {tuple(line.split("\t")) for line in kg_text.splitlines()}
    problems = []
    rows = list(csv.reader(io.StringIO(csv_text)))[1:]
    for i, row in enumerate(rows):
        actions = json.loads(row[0])
        n_chat = sum(a["type"] == "chat" for a in actions)
        if not 4 <= n_chat <= 10:
            problems.append(f"row {i}: {n_chat} chat messages")
        # turns: consecutive chat messages of one sender, with the paths grounding them
        turns: List[list] = []
        pending: Dict[str, List[Triple]] = {"user": [], "assistant": []}
        for a in actions:
            if a.get("action_id") == "kgwalk/choose_path":
                for t in a["metadata"]["path"][1]:
                    if tuple(t) not in kg:
                        problems.append(f"row {i}: path triple {t} not in the KG")
                    pending[a["sender"]].append(tuple(t))
            elif a["type"] == "chat":
                if turns and turns[-1][0] == a["sender"]:
                    turns[-1][1] += " " + a["message"]
                else:
                    turns.append([a["sender"], a["message"], []])
                turns[-1][2] += pending[a["sender"]]
                pending[a["sender"]] = []
        for sender, text, paths in turns:
            for s, _, o in paths:
                for e in (s, o):
                    if _name(e).lower() not in text.lower():
                        problems.append(f"row {i}: '{e}' not mentioned in {text!r}")
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args(argv)
    csv_text, kg_text, odds_text = build()
    problems = verify(csv_text, kg_text)
    if problems:
        print("\n".join(problems[:20]))
        return 1
    files = {"opendialkg.csv": csv_text, "opendialkg_triples.txt": kg_text, ODDS_NAME: odds_text}
    if args.check:
        ok = True
        for name, text in files.items():
            path = os.path.join(OUT_DIR, name)
            same = os.path.isfile(path) and open(path, encoding="utf-8", newline="").read() == text
            print(f"{path}: {'up to date' if same else 'DIFFERS from the generator'}")
            ok &= same
        return 0 if ok else 1
    os.makedirs(OUT_DIR, exist_ok=True)
    for name, text in files.items():
        with open(os.path.join(OUT_DIR, name), "w", encoding="utf-8", newline="") as f:
            f.write(text)
        print(f"wrote {os.path.join(OUT_DIR, name)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
