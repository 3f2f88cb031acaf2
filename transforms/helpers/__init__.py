"""Helpers shared by the transforms: parsing, sample screening, pricing and ordering rules."""
