"""Benchmarks and the real-service harnesses they (and the integration tests) run against."""
