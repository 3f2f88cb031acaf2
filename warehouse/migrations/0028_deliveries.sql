-- 0028: meta.deliveries: the mail `cardhours deliver` and the monthly build's delivery step sent,
-- one row per month x audience x recipient (audience: 'operations', 'finance' or
-- 'department:<id>'). A row is written right after its message was accepted by the relay, so
-- a rerun sends only what has no row; `--resend` sends again and replaces the row.
-- `digest`: SHA-256 of the message's content (body and attachments, not its date or id).
-- Columns: warehouse/deliveries.py DELIVERY_SCHEMA. Docs: docs/marts.md.

CREATE TABLE meta.deliveries (
    month      DATE NOT NULL,
    audience   VARCHAR NOT NULL,
    recipient  VARCHAR NOT NULL,
    subject    VARCHAR NOT NULL,
    digest     VARCHAR NOT NULL,
    sent_at    TIMESTAMP NOT NULL,
    PRIMARY KEY (month, audience, recipient)
);
