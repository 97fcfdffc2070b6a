-- Console sign-ins, for every replica to serve (STORE-3, OPS-5; src/sign_ins/). The browser
-- holds the session id; a row is found by its SHA-256 only.
CREATE TABLE console_sign_ins (
    id_hash    TEXT PRIMARY KEY NOT NULL,   -- hex SHA-256 of the session id
    credential TEXT NOT NULL,               -- the credential signed in with
    csrf       TEXT NOT NULL,               -- the anti-forgery token of its forms
    opened_at  INTEGER NOT NULL,
    seen_at    INTEGER NOT NULL,            -- last use, at most a minute old
    flash      TEXT,                        -- a message for the next page
    new_token  TEXT,                        -- a token just created, sealed under the session id
    ended      TEXT                         -- why it ended, for its next request
);
CREATE INDEX console_sign_ins_by_seen ON console_sign_ins (seen_at);
CREATE INDEX console_sign_ins_by_credential ON console_sign_ins (credential);
