"""The books: a month's chargeback rows, the ledger and its hash chain, the close and its conditions.

Warehouse-level logic shared by the pipelines and the command line; the caller passes the clock.
"""
