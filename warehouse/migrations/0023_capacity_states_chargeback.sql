-- 0023: the chargeback's reconciliation carries the capacity the platform keeps: GPU-hours of the
-- down and planned-down rows (contracts/capacity_states.py PLATFORM_STATES) and their cost.
-- Columns: transforms/marts/mart_chargeback_reconciliation.py SCHEMA; docs/chargeback.md.
ALTER TABLE marts.mart_chargeback_reconciliation ADD COLUMN down_gpu_hours DECIMAL(18,6);
ALTER TABLE marts.mart_chargeback_reconciliation ADD COLUMN planned_down_gpu_hours DECIMAL(18,6);
ALTER TABLE marts.mart_chargeback_reconciliation ADD COLUMN platform_cost DECIMAL(18,2);
