"""The section vocabulary (sections.toml), read by ingestion and understanding alike."""

from rag_server.vocabulary.sections import SectionSpec, Vocabulary, load_vocabulary

__all__ = ["SectionSpec", "Vocabulary", "load_vocabulary"]
