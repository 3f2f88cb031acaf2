"""Contracts that several layers read (transforms, reports, pipelines): declared once here,
imported by each of them; nothing here imports beyond the standard library."""
