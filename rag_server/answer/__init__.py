"""Flow B, the answer pipeline behind AnswerService/Ask (seed 003): safety pre-filter -> conversation
memory -> understanding -> route -> retrieval -> decide -> generation -> grounding -> entailment ->
verified blocks. Domain types only: api/answer.py converts them to protobuf at the edge."""
