"""
Coreference backends over parser mentions: a deterministic rule-based resolver (default);
the neural ``coreferee`` backend lives in :mod:`.neural_coref` (selected by name).

:class:`RuleCoref` reads mentions in text order over all sentences of a document set (all
passages, so links cross sentence and passage boundaries) and attaches each one to an
earlier cluster by the first rule that applies:

0. **Apposition**: "the civil engineer John Smeaton" is one entity (an appositive that a
   rule below also links merges both clusters).
1. **Proper names**: a mention headed by a proper noun joins the nearest earlier cluster
   holding a name with the same head word whose name tokens contain, or are contained in,
   its own ("Johann Sebastian Bach" ... "Bach"; "Winstanley" ... "Henry Winstanley"),
   unless it has a modifier the other lacks ("the third Eddystone Lighthouse" is not "the
   first Eddystone Lighthouse"). A one-word person name with no such cluster joins the
   nearest earlier person name it begins ("Greta Hansen" ... "Greta"; either mention
   tagged PERSON).
2. **Exact repeats**: a common-noun mention without determiner or with a definite one, and
   without pronoun words, joins the nearest earlier mention with the same text ("science
   fiction" ... "science fiction"; never "a ship" ... "a ship").
3. **Definite descriptions**: ``the``/``this``/``that``/``these``/``those`` + common noun
   joins the nearest earlier mention (within ``description_window`` sentences) whose head
   word or lemma equals its head and whose words include all its modifiers ("the tower" ->
   "Smeaton's Tower"; "the present tower" does not match "Smeaton's Tower").
4. **Pronouns** (third person): the nearest compatible antecedent, searched right-to-left in
   the pronoun's own sentence, then sentence by sentence backwards (``pronoun_window``
   sentences). Inside each earlier sentence the entities it refers to by a pronoun come
   first (the entity the text is about, as in centering theory), then agents (ARG0), then
   left to right, a phrase before the possessor inside it: "Her father grew potatoes and
   her mother kept bees. As a child she ..." is the "her", not the mother; "Greta's son
   Erik took over. He added cakes" is the son, not Greta.
   he/she need a person-like cluster (a person noun such as "keeper", an earlier he/she, or
   a PERSON entity unless the cluster also holds a non-person common noun such as "the
   tower" or is a possessive name such as "Smeaton's Tower") of a compatible gender;
   it/its a non-person singular cluster; they/their a plural or organisation cluster. A
   non-possessive pronoun never takes a co-argument of its own predicate ("He saw him").

Known limits: no world knowledge (gender of first names is unknown, so "Mary" is compatible
with "he" until a "she" links to it); a bare name after a modified one with the same head
merges with it ("the first Eddystone Lighthouse" ... "Eddystone Lighthouse"); exact repeats
of generic nouns merge ("water" ... "water"); pleonastic "it" ("it is said") is resolved
like any pronoun; split antecedents ("Mary and John ... they") are not built; spaCy NER and
tagging errors propagate (a person tagged ORG is still found through other mentions of its
cluster); cataphora ("Before he died, Bach ...") and bridging ("the roof" of a house) are not
resolved; only parser mentions (predicate arguments, possessors, appositives) can corefer.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Set, Tuple

from parlai_docgraph.graphs.parsers.base import Mention, ParsedSentence

MentionRef = Tuple[int, int, int]

PRONOUNS: Dict[str, Tuple[str, str]] = {
    **{w: ("Masc", "Sing") for w in ("he", "him", "his", "himself")},
    **{w: ("Fem", "Sing") for w in ("she", "her", "hers", "herself")},
    **{w: ("Neut", "Sing") for w in ("it", "its", "itself")},
    **{w: ("", "Plur") for w in ("they", "them", "their", "theirs", "themselves")},
}
MASC_NOUNS = frozenset(
    "man boy king prince father son brother husband uncle nephew monk duke lord sir "
    "gentleman emperor actor grandfather".split()
)
FEM_NOUNS = frozenset(
    "woman girl queen princess mother daughter sister wife aunt niece nun duchess lady "
    "actress empress grandmother".split()
)
PERSON_NOUNS = MASC_NOUNS | FEM_NOUNS | frozenset(
    "person people child keeper engineer composer musician singer writer author poet "
    "painter artist architect scientist inventor player president minister leader "
    "founder owner builder teacher student doctor soldier captain officer politician "
    "director producer designer chef farmer worker explorer philosopher lawyer judge "
    "priest bishop pope member citizen resident official manager coach athlete "
    "pilot surgeon nurse chemist physicist biologist mathematician historian journalist "
    "reporter editor photographer librarian baker carpenter sailor fisherman merchant "
    "banker actor actress dancer novelist professor researcher guest host mayor governor "
    "senator chancellor emperor diplomat detective astronaut".split()
)
GROUP_ENTS = frozenset({"ORG", "NORP"})
DEFINITE = frozenset({"the", "this", "that", "these", "those"})
EXACT_DETERMINERS = DEFINITE | {""}


def _is_pronoun(m: Mention) -> bool:
    return m.pos == "PRON" and m.text.lower() in PRONOUNS


def _words(m: Mention) -> Set[str]:
    return {w.strip(".,'’").lower() for w in m.text.replace("'s", " ").split()}


class _Clusters:
    """Union of mentions into clusters, with the features pronoun agreement needs."""

    def __init__(self) -> None:
        self.members: Dict[int, List[Tuple[MentionRef, Mention]]] = {}
        self.cluster_of: Dict[MentionRef, int] = {}
        self.next_id = 0

    def add(self, ref: MentionRef, m: Mention, cluster: Optional[int]) -> None:
        if cluster is None:
            cluster = self.next_id
            self.next_id += 1
            self.members[cluster] = []
        self.members[cluster].append((ref, m))
        self.cluster_of[ref] = cluster

    def merge(self, src: int, dst: int) -> None:
        """Move every mention of cluster ``src`` into cluster ``dst``."""
        for ref, m in self.members.pop(src):
            self.members[dst].append((ref, m))
            self.cluster_of[ref] = dst

    def agrees(self, cluster: int, pronoun: str) -> bool:
        """Whether ``pronoun`` may refer to the entity of ``cluster``."""
        gender, number = PRONOUNS[pronoun]
        person, genders, plural, singular, group = False, set(), False, False, False
        weak_person = thing = False
        for _, m in self.members[cluster]:
            low = m.text.lower()
            if _is_pronoun(m):
                g, n = PRONOUNS[low]
                person |= g in ("Masc", "Fem")
                if g:
                    genders.add(g)
                plural |= n == "Plur"
                singular |= n == "Sing"
                continue
            lemma = m.head_lemma
            person |= lemma in PERSON_NOUNS
            weak_person |= m.ent == "PERSON"
            thing |= (m.pos == "NOUN" and lemma not in PERSON_NOUNS) or (
                m.pos == "PROPN" and ("'s " in m.text or "’s " in m.text)
            )
            if lemma in MASC_NOUNS:
                genders.add("Masc")
            if lemma in FEM_NOUNS:
                genders.add("Fem")
            group |= m.ent in GROUP_ENTS
            plural |= m.number == "Plur"
            singular |= m.number == "Sing" or (m.pos == "PROPN" and m.number != "Plur")
        person |= weak_person and not thing
        if number == "Plur":
            return (plural or group) and not genders
        if plural and not singular:
            return False
        if gender == "Neut":
            return not person
        return person and "Neut" not in genders and (not genders or gender in genders)


class RuleCoref:
    """Deterministic rule-based coreference (see the module docstring)."""

    name = "rule"
    version = "rule-v3"  # bump on any rule change: it is part of graph-store keys

    def __init__(self, pronoun_window: int = 3, description_window: int = 10) -> None:
        self.pronoun_window = pronoun_window
        self.description_window = description_window

    def describe(self) -> str:
        """Backend name and version for graph metadata."""
        return self.version

    def resolve(self, parsed: Sequence[ParsedSentence]) -> List[Tuple[MentionRef, ...]]:
        """
        Clusters (two or more mentions each) of ``(sentence, start, end)`` refs, where the
        sentence is the position in ``parsed``; mentions and clusters in text order.
        """
        run = self.start()
        run.add(parsed)
        return run.clusters()

    def start(self) -> "RuleCorefRun":
        """An empty incremental resolution (:class:`RuleCorefRun`) with these rules."""
        return RuleCorefRun(self)

    # ---------------------------------------------------------------- rules
    def _antecedent(
        self, s: int, m: Mention, ref: MentionRef, seen: "_Seen", state: _Clusters,
        coargs: Dict[MentionRef, Set[Tuple[int, int]]],
    ) -> Optional[int]:
        """The cluster ``m`` joins, or ``None`` for a new one."""
        if _is_pronoun(m):
            return self._pronoun(s, m, ref, seen, state, coargs)
        if m.pos == "PROPN" and m.name:
            mine = set(m.name)
            for oref, o in reversed(seen.names.get(m.head.lower(), ())):
                theirs = set(o.name)
                extra = set(m.modifiers) - mine - _words(o)
                if (mine <= theirs or theirs <= mine) and not extra:
                    return state.cluster_of[oref]
            if len(m.name) == 1 and not m.modifiers:
                for oref, o in reversed(seen.first_names.get(m.name[0], ())):
                    if "PERSON" in (m.ent, o.ent):
                        return state.cluster_of[oref]
            return None
        exact = m.determiner in EXACT_DETERMINERS and not _words(m) & PRONOUNS.keys()
        if m.pos == "NOUN" and exact:
            text = m.text.lower()
            for oref, o in reversed(seen.nouns.get(m.head.lower(), ())):
                if o.text.lower() == text:
                    return state.cluster_of[oref]
        if m.pos == "NOUN" and m.determiner in DEFINITE:
            candidates = sorted(
                set(seen.nouns.get(m.head.lower(), ())) | set(seen.nouns.get(m.head_lemma, ())),
                reverse=True,
            )
            for oref, o in candidates:
                if oref[0] < s - self.description_window:
                    break
                if set(m.modifiers) <= _words(o) and not (
                    o.number and m.number and o.number != m.number
                ):
                    return state.cluster_of[oref]
        return None

    def _pronoun(
        self, s: int, m: Mention, ref: MentionRef, seen: "_Seen", state: _Clusters,
        coargs: Dict[MentionRef, Set[Tuple[int, int]]],
    ) -> Optional[int]:
        """Nearest compatible antecedent of a third-person pronoun (Hobbs-like order)."""
        pronoun = m.text.lower()
        mine = coargs.get(ref, set())
        own = [(r, o) for r, o in seen.by_sentence.get(s, ()) if r[2] <= m.start]
        order = list(reversed(own))
        for sent in range(s - 1, s - 1 - self.pronoun_window, -1):
            order.extend(self._salience_order(seen.by_sentence.get(sent, ()), seen, state))
        for oref, o in order:
            if not m.possessive and mine & coargs.get(oref, set()):
                continue
            cluster = state.cluster_of[oref]
            if state.agrees(cluster, pronoun):
                return cluster
        return None

    @staticmethod
    def _salience_order(mentions: Sequence[Tuple[MentionRef, Mention]], seen: "_Seen",
                        state: _Clusters) -> List[Tuple[MentionRef, Mention]]:
        """An earlier sentence's mentions in the order pronouns try them (module docstring,
        rule 4): entities it pronominalises, agents, then left to right, outer first."""
        centers = {state.cluster_of[r] for r, o in mentions if _is_pronoun(o)}
        return sorted(mentions, key=lambda x: (
            state.cluster_of[x[0]] not in centers, x[0] not in seen.agents, x[0][1], -x[0][2]))


class RuleCorefRun:
    """
    :meth:`RuleCoref.resolve` one batch of sentences at a time: every mention is attached
    to earlier mentions only, so feeding a document's sentences in batches gives the
    clusters of feeding them at once, except for one case :meth:`add` can refuse (see
    ``keep_earlier_apart``). Used by ``extend_document_graph`` to resolve new passages at
    their own cost.
    """

    def __init__(self, rules: RuleCoref) -> None:
        self.rules = rules
        self.state = _Clusters()
        self.seen = _Seen()
        self.coargs: Dict[MentionRef, Set[Tuple[int, int]]] = {}
        self.sentences = 0
        #: earliest mention ref of each cluster (tells clusters of earlier batches apart)
        self.first: Dict[int, MentionRef] = {}
        #: appositions whose merge of two clusters of earlier batches was refused
        self.kept_apart = 0

    def add(self, parsed: Sequence[ParsedSentence], keep_earlier_apart: bool = False) -> None:
        """
        Resolve the mentions of ``parsed``, numbered as sentences ``self.sentences`` on.
        ``keep_earlier_apart``: an apposition that would merge two clusters both holding
        mentions of earlier batches (a retroactive merge of existing entities) only puts the
        appositive in the head's cluster; counted in ``kept_apart``.
        """
        base = self.sentences
        state, seen = self.state, self.seen
        appos: Dict[MentionRef, MentionRef] = {}
        for s, ps in enumerate(parsed, base):
            for p, pred in enumerate(ps.predicates):
                for arg in pred.arguments:
                    self.coargs.setdefault((s, *arg.mention.key), set()).add((s, p))
                    if arg.role == "ARG0":
                        seen.agents.add((s, *arg.mention.key))
            for head, other in ps.appositions:
                appos[(s, *other.key)] = (s, *head.key)
        for s, ps in enumerate(parsed, base):
            for m in ps.mentions():
                ref = (s, m.start, m.end)
                cluster = self.rules._antecedent(s, m, ref, seen, state, self.coargs)
                if ref in appos and appos[ref] in state.cluster_of:
                    head = state.cluster_of[appos[ref]]
                    if cluster is not None and cluster != head:
                        if keep_earlier_apart and self.first[cluster][0] < base \
                                and self.first[head][0] < base:
                            self.kept_apart += 1
                        else:
                            state.merge(cluster, head)
                            self.first[head] = min(self.first[head], self.first.pop(cluster))
                    cluster = head
                state.add(ref, m, cluster)
                cluster = state.cluster_of[ref]
                self.first.setdefault(cluster, ref)
                seen.add(ref, m)
        self.sentences = base + len(parsed)

    def cluster_of(self, ref: MentionRef) -> int:
        """The cluster id of a resolved mention."""
        return self.state.cluster_of[ref]

    def clusters(self) -> List[Tuple[MentionRef, ...]]:
        """Clusters of two or more mentions, as :meth:`RuleCoref.resolve` returns them."""
        return sorted(
            tuple(sorted(ref for ref, _ in members))
            for members in self.state.members.values() if len(members) > 1
        )


class _Seen:
    """Mentions read so far, indexed for the rules (keeps resolution near-linear)."""

    def __init__(self) -> None:
        self.names: Dict[str, List[Tuple[MentionRef, Mention]]] = {}
        self.nouns: Dict[str, List[Tuple[MentionRef, Mention]]] = {}
        self.by_sentence: Dict[int, List[Tuple[MentionRef, Mention]]] = {}
        #: mentions that are some predicate's ARG0 (preferred antecedents of pronouns)
        self.agents: Set[MentionRef] = set()
        #: multi-word names by their first token ("greta" -> "Greta Hansen")
        self.first_names: Dict[str, List[Tuple[MentionRef, Mention]]] = {}

    def add(self, ref: MentionRef, m: Mention) -> None:
        self.by_sentence.setdefault(ref[0], []).append((ref, m))
        if m.pos == "PROPN" and m.name:
            self.names.setdefault(m.head.lower(), []).append((ref, m))
            if len(m.name) > 1:
                self.first_names.setdefault(m.name[0], []).append((ref, m))
        if m.pos in ("NOUN", "PROPN"):
            for key in {m.head.lower(), m.head_lemma}:
                self.nouns.setdefault(key, []).append((ref, m))


class NoCoref:
    """Backend that links nothing (every mention its own concept)."""

    name = "none"

    def describe(self) -> str:
        """Backend name for graph metadata."""
        return "none"

    def resolve(self, parsed: Sequence[ParsedSentence]) -> List[Tuple[MentionRef, ...]]:
        """No clusters."""
        return []

    def start(self) -> "NoCorefRun":
        """An incremental run that links nothing."""
        return NoCorefRun()


class NoCorefRun:
    """:class:`RuleCorefRun`'s interface for :class:`NoCoref`: every mention alone."""

    kept_apart = 0

    def __init__(self) -> None:
        self.first: Dict[MentionRef, MentionRef] = {}
        self.sentences = 0

    def add(self, parsed: Sequence[ParsedSentence], keep_earlier_apart: bool = False) -> None:
        """Register the mentions of ``parsed`` (sentences numbered on from earlier batches)."""
        for s, ps in enumerate(parsed, self.sentences):
            for m in ps.mentions():
                self.first[(s, m.start, m.end)] = (s, m.start, m.end)
        self.sentences += len(parsed)

    def cluster_of(self, ref: MentionRef) -> MentionRef:
        """Each mention is its own cluster."""
        return ref

    def clusters(self) -> List[Tuple[MentionRef, ...]]:
        """No clusters."""
        return []


def get_coref(name: str = "rule", **kwargs: object) -> object:
    """
    A coreference backend by name: ``rule`` (default), ``none``, or ``coreferee`` (neural,
    see :mod:`.neural_coref`; ``CorefBackendUnavailable`` when not installed);
    ``ValueError`` for other names.
    """
    if name == "coreferee":
        from parlai_docgraph.graphs.neural_coref import CorefereeCoref

        return CorefereeCoref(**kwargs)
    backends = {"rule": RuleCoref, "none": NoCoref}
    if name not in backends:
        raise ValueError(f"unknown coreference backend {name!r}; choose one of "
                         f"{sorted([*backends, 'coreferee'])}")
    return backends[name](**kwargs)
