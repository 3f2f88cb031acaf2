"""Pure transforms, grouped by the layer of data they build.

- ``helpers``: pure functions shared by the tables (parsing, screening, pricing, ordering);
- ``staging``: ``stg_<source>__<entity>`` tables from the raw rows;
- ``intermediate``: ``int_<entity>_<verb>`` tables;
- ``marts``: the public ``fct_*`` / ``mart_*`` tables and the private modules each one needs.

Frames in, frames out: no Dagster, no I/O, no clock reads (the caller passes ``as_of``).
"""
