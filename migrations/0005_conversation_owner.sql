-- 0005: a conversation belongs to the caller that started it: the API key's name, or 'anonymous' while
-- auth is off (rag_server/persistence/conversations.py). Another caller can neither read nor continue it.
-- Conversations stored before this migration were started without an owner: they belong to 'anonymous',
-- so once auth is on no key can continue them.

ALTER TABLE conversations
    ADD COLUMN owner text NOT NULL DEFAULT 'anonymous' CHECK (owner <> '');
