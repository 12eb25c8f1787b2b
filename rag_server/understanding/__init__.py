"""Query understanding without an LLM: the question read once into a QueryFrame (understanding.reading)."""
