-- 0014: the FOCUS 1.2 export gets InvoiceId and ServiceSubcategory and leaves out the columns
-- FOCUS 1.3 introduced (AllocatedMethodDetails, AllocatedMethodId, AllocatedResourceId,
-- AllocatedResourceName, HostProviderName, ServiceProviderName); docs/chargeback.md says why.
-- The columns mirror SCHEMA of transforms/fct_chargeback_focus.py in its order: `cardhours
-- close` copies the mart into the ledger with SELECT *, and ALTER TABLE ADD COLUMN only
-- appends, so both tables are rebuilt (same rows) instead of altered.
--
-- Existing rows: ServiceSubcategory 'Other (Compute)' (every row has ServiceCategory
-- 'Compute'); InvoiceId null in the mart, and on the ledger rows of months already closed the
-- id `cardhours close` writes from now on: cardhours/ledger.py INVOICE_ID,
-- "<BillingAccountId>-<YYYY-MM of the billing month>" (tests/warehouse/test_focus_migration.py
-- checks the two agree). The dropped values follow from columns kept (AllocatedMethodId and
-- -Details: x_ChargeKind, SubAccountId and Tags' idle_policy; AllocatedResourceId/-Name:
-- ResourceId/-Name; ServiceProviderName = ProviderName), except HostProviderName, which was
-- the configured rates.focus.host_provider_name.

CREATE TABLE marts.fct_chargeback_focus_0014 (
    "billing_month" DATE NOT NULL,
    "charge_month" DATE NOT NULL,
    "cluster" VARCHAR NOT NULL,
    "BilledCost" DECIMAL(18,2),
    "BillingAccountId" VARCHAR,
    "BillingAccountName" VARCHAR,
    "BillingCurrency" VARCHAR,
    "BillingPeriodEnd" TIMESTAMP,
    "BillingPeriodStart" TIMESTAMP,
    "ChargeCategory" VARCHAR,
    "ChargeClass" VARCHAR,
    "ChargeDescription" VARCHAR,
    "ChargeFrequency" VARCHAR,
    "ChargePeriodEnd" TIMESTAMP,
    "ChargePeriodStart" TIMESTAMP,
    "ConsumedQuantity" DECIMAL(18,6),
    "ConsumedUnit" VARCHAR,
    "ContractedCost" DECIMAL(18,2),
    "ContractedUnitPrice" DECIMAL(18,6),
    "EffectiveCost" DECIMAL(18,2),
    "InvoiceId" VARCHAR,
    "InvoiceIssuerName" VARCHAR,
    "ListCost" DECIMAL(18,2),
    "ListUnitPrice" DECIMAL(18,6),
    "PricingCategory" VARCHAR,
    "PricingQuantity" DECIMAL(18,6),
    "PricingUnit" VARCHAR,
    "ProviderName" VARCHAR,
    "PublisherName" VARCHAR,
    "ResourceId" VARCHAR,
    "ResourceName" VARCHAR,
    "ResourceType" VARCHAR,
    "ServiceCategory" VARCHAR,
    "ServiceName" VARCHAR,
    "ServiceSubcategory" VARCHAR,
    "SkuId" VARCHAR,
    "SkuMeter" VARCHAR,
    "SkuPriceId" VARCHAR,
    "SubAccountId" VARCHAR,
    "SubAccountName" VARCHAR,
    "Tags" VARCHAR,
    "x_ActiveGpuHours" DECIMAL(18,6),
    "x_IdleGpuHours" DECIMAL(18,6),
    "x_Utilization" DECIMAL(9,6),
    "x_JobCount" BIGINT,
    "x_Division" VARCHAR,
    "x_IdleShare" DECIMAL(9,6),
    "x_ChargeKind" VARCHAR
);

INSERT INTO marts.fct_chargeback_focus_0014 BY NAME
SELECT * EXCLUDE (
    "AllocatedMethodDetails", "AllocatedMethodId", "AllocatedResourceId", "AllocatedResourceName",
    "HostProviderName", "ServiceProviderName"),
    CAST(NULL AS VARCHAR) AS "InvoiceId",
    CASE WHEN "ServiceCategory" = 'Compute' THEN 'Other (Compute)' END AS "ServiceSubcategory"
FROM marts.fct_chargeback_focus;

DROP TABLE marts.fct_chargeback_focus;
ALTER TABLE marts.fct_chargeback_focus_0014 RENAME TO fct_chargeback_focus;

CREATE TABLE marts.chargeback_ledger_0014 (
    "billing_month" DATE NOT NULL,
    "charge_month" DATE NOT NULL,
    "cluster" VARCHAR NOT NULL,
    "BilledCost" DECIMAL(18,2),
    "BillingAccountId" VARCHAR,
    "BillingAccountName" VARCHAR,
    "BillingCurrency" VARCHAR,
    "BillingPeriodEnd" TIMESTAMP,
    "BillingPeriodStart" TIMESTAMP,
    "ChargeCategory" VARCHAR,
    "ChargeClass" VARCHAR,
    "ChargeDescription" VARCHAR,
    "ChargeFrequency" VARCHAR,
    "ChargePeriodEnd" TIMESTAMP,
    "ChargePeriodStart" TIMESTAMP,
    "ConsumedQuantity" DECIMAL(18,6),
    "ConsumedUnit" VARCHAR,
    "ContractedCost" DECIMAL(18,2),
    "ContractedUnitPrice" DECIMAL(18,6),
    "EffectiveCost" DECIMAL(18,2),
    "InvoiceId" VARCHAR,
    "InvoiceIssuerName" VARCHAR,
    "ListCost" DECIMAL(18,2),
    "ListUnitPrice" DECIMAL(18,6),
    "PricingCategory" VARCHAR,
    "PricingQuantity" DECIMAL(18,6),
    "PricingUnit" VARCHAR,
    "ProviderName" VARCHAR,
    "PublisherName" VARCHAR,
    "ResourceId" VARCHAR,
    "ResourceName" VARCHAR,
    "ResourceType" VARCHAR,
    "ServiceCategory" VARCHAR,
    "ServiceName" VARCHAR,
    "ServiceSubcategory" VARCHAR,
    "SkuId" VARCHAR,
    "SkuMeter" VARCHAR,
    "SkuPriceId" VARCHAR,
    "SubAccountId" VARCHAR,
    "SubAccountName" VARCHAR,
    "Tags" VARCHAR,
    "x_ActiveGpuHours" DECIMAL(18,6),
    "x_IdleGpuHours" DECIMAL(18,6),
    "x_Utilization" DECIMAL(9,6),
    "x_JobCount" BIGINT,
    "x_Division" VARCHAR,
    "x_IdleShare" DECIMAL(9,6),
    "x_ChargeKind" VARCHAR,
    "closed_at" TIMESTAMP NOT NULL
);

INSERT INTO marts.chargeback_ledger_0014 BY NAME
SELECT * EXCLUDE (
    "AllocatedMethodDetails", "AllocatedMethodId", "AllocatedResourceId", "AllocatedResourceName",
    "HostProviderName", "ServiceProviderName"),
    "BillingAccountId" || '-' || strftime("billing_month", '%Y-%m') AS "InvoiceId",
    CASE WHEN "ServiceCategory" = 'Compute' THEN 'Other (Compute)' END AS "ServiceSubcategory"
FROM marts.chargeback_ledger;

DROP TABLE marts.chargeback_ledger;
ALTER TABLE marts.chargeback_ledger_0014 RENAME TO chargeback_ledger;
