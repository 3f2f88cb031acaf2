"""Table, frame and flag contracts: declared once here, read by every layer above.

The bottom layer: imports nothing of cardhours (only polars and the standard library).
"""
