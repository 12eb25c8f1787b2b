"""LLM providers of Ask (AnswerService), provider side only:

* bedrock_converse.py: Bedrock Converse / ConverseStream through boto3 (`bedrock-runtime`);
* cohere_chat.py: Cohere Chat v2 with documents through the cohere SDK (native citations);
* prompts.py: every prompt text, as data;
* schemas.py: the JSON replies asked for, as pydantic models (`parse` -> MalformedOutput otherwise).

Errors: a failed call (service error, throttling, timeout, connection) is `ProviderError`; a reply that
came back but is not usable (not the JSON asked for, cut at max tokens, filtered, citing a document it
was not given) is `MalformedOutput`.

Like the rest of `providers` (the shared core), nothing here imports the server side: the Understander,
Generator and Judge built on these live beside their offline defaults (answer/llm_understand.py,
answer/llm_generate.py, answer/llm_entail.py), chosen by answer/factory.py.
"""
