"""Marts: one ``fct_*`` / ``mart_*`` module per public table, and the private modules they use."""
