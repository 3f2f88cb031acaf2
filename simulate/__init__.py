"""The cluster simulator: a tool beside the layers that writes the files a real site has
(dcgm-exporter series, sacct output, a config). The demo and the tests use it.
"""
