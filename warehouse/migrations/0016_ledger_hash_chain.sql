-- 0016: the closed ledger's hash chain and accepted gaps (docs/chargeback.md, "Closed months";
-- cardhours/ledger_chain.py computes and checks the chain).
--
-- Every closed ledger row and every closed month's record gets `ledger_seq`, its place in
-- one chain over the whole ledger (1, 2, ...: each close numbers its FOCUS rows, then its
-- job lines, then its month record), and `row_hash` / `head_hash` = sha256 over the previous
-- hash and the row's canonical serialization. The month record's `head_hash` is the month's
-- head hash that `cardhours close` prints. Months closed before this migration have nulls
-- here until the next close seals them (same rows, hashes added).
-- chargeback_closed_months.accepted_gaps: the reason given with `cardhours close
-- --accept-gaps`; `gaps`: what was missing when it was accepted (one line each).
ALTER TABLE marts.chargeback_ledger ADD COLUMN ledger_seq BIGINT;
ALTER TABLE marts.chargeback_ledger ADD COLUMN row_hash VARCHAR;
ALTER TABLE marts.chargeback_ledger_jobs ADD COLUMN ledger_seq BIGINT;
ALTER TABLE marts.chargeback_ledger_jobs ADD COLUMN row_hash VARCHAR;
ALTER TABLE marts.chargeback_closed_months ADD COLUMN accepted_gaps VARCHAR;
ALTER TABLE marts.chargeback_closed_months ADD COLUMN gaps VARCHAR;
ALTER TABLE marts.chargeback_closed_months ADD COLUMN ledger_seq BIGINT;
ALTER TABLE marts.chargeback_closed_months ADD COLUMN head_hash VARCHAR;
