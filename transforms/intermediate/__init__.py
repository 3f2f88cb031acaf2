"""Intermediate tables (``int_<entity>_<verb>``) and the attribution SQL that builds them."""
