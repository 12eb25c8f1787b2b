"""Vietnamese text handling: accent folding, slugs, tokens, token counting, numbers."""

from rag_server.text.match import folded_words, tokenize
from rag_server.text.normalize import fold, slugify, word_count
from rag_server.text.numbers import extract_numbers
from rag_server.text.tokens import count_tokens

__all__ = ["count_tokens", "extract_numbers", "fold", "folded_words", "slugify", "tokenize", "word_count"]
