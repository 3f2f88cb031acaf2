"""Blocks of the review and department pages: each is ``ReviewInputs -> Section | None``."""
