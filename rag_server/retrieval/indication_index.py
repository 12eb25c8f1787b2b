"""The indication index of a served generation: every prose chunk of the indication section (sections.toml
[roles] indication), tokenized once, with an inverted index of its folded words, and the keyword pass over
it (a contiguous, word-boundary phrase; a phrase word typed with diacritics must match them)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from rag_server.domain import Chunk, ChunkKind, Hit, ScoreKind
from rag_server.text.match import Tok, find, phrase, tokenize, words


@dataclass(frozen=True)
class PreparedChunk:
    """An indication-section chunk with its words tokenized once (cached per served generation)."""

    chunk: Chunk
    words: tuple[Tok, ...]
    folded: tuple[str, ...]
    positions: Mapping[str, tuple[int, ...]]  # folded word -> its word offsets in the chunk


def prepare(chunks: Sequence[Chunk]) -> list[PreparedChunk]:
    out: list[PreparedChunk] = []
    for c in chunks:
        toks = tuple(words(tokenize(c.text)))
        folded = tuple(t.folded for t in toks)
        positions: dict[str, list[int]] = defaultdict(list)
        for i, word in enumerate(folded):
            positions[word].append(i)
        out.append(PreparedChunk(c, toks, folded, {w: tuple(at) for w, at in positions.items()}))
    return out


def keyword_score(position: int, word_count: int) -> float:
    return 1.0 + 1.0 / (1.0 + position) + 1.0 / (1.0 + word_count / 40.0)


def keyword_pass(chunks: Sequence[Chunk | PreparedChunk], indication: str) -> list[Hit]:
    """The chunks where the indication occurs as a phrase (text.match.find, tried only where its first
    word occurs; a word typed with diacritics must match them), best first."""
    if not words(tokenize(indication)):
        return []
    pat = phrase(indication)
    hits: list[Hit] = []
    for item in chunks:
        prepared = item if isinstance(item, PreparedChunk) else prepare([item])[0]
        positions = find(prepared.words, pat, typed=True, starts=prepared.positions.get(pat.folded[0], ()))
        if positions:
            score = keyword_score(positions[0], len(prepared.words))
            hits.append(Hit(prepared.chunk, score, ScoreKind.LEXICAL))
    hits.sort(key=lambda h: (-h.score, h.chunk.chunk_id))
    return hits


@dataclass(frozen=True)
class IndicationIndex:
    """Every indication prose chunk of the served generation, tokenized once, with an inverted index of its
    folded words: a phrase is looked for only in the chunks holding all of its words, so a lookup costs the
    chunks that could match, not the whole book. An indication none of whose words occurs there has nothing
    near it: the dense fallback is not tried."""

    chunks: tuple[PreparedChunk, ...] = ()
    postings: Mapping[str, tuple[int, ...]] = field(default_factory=dict)  # folded word -> chunk positions
    # a vocabulary form's hits (bounded by the vocabulary: never a caller's text), found once per generation
    _form_hits: dict[str, tuple[Hit, ...]] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, chunks: Sequence[Chunk], section_key: str) -> IndicationIndex:
        prepared = prepare(
            [c for c in chunks if c.section_key == section_key and c.chunk_kind is ChunkKind.PROSE]
        )
        postings: dict[str, list[int]] = defaultdict(list)
        for i, p in enumerate(prepared):
            for word in dict.fromkeys(p.folded):
                postings[word].append(i)
        return cls(tuple(prepared), {w: tuple(ids) for w, ids in postings.items()})

    def form_hits(self, form: str) -> tuple[Hit, ...]:
        """keyword_pass over the chunks containing `form`, a form of the clinical vocabulary (only those:
        the memo is bounded by the vocabulary)."""
        hits = self._form_hits.get(form)
        if hits is None:
            hits = self._form_hits[form] = tuple(keyword_pass(self.containing(form), form))
        return hits

    def containing(self, text: str) -> list[PreparedChunk]:
        """The chunks holding every word of `text` (folded), in index order."""
        folded = list(dict.fromkeys(t.folded for t in words(tokenize(text))))
        if not folded:
            return []
        lists = sorted((self.postings.get(w, ()) for w in folded), key=len)
        common = set(lists[0]).intersection(*lists[1:])
        return [self.chunks[i] for i in sorted(common)]
