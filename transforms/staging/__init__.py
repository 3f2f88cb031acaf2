"""Staging tables: one ``stg_<source>__<entity>`` module per table, built from raw rows."""
