"""The public marts copied to PostgreSQL for dashboards and BI tools (docs/publish.md): the
column types mapped once (``pg_types``), the tables derived from the DuckDB tables
(``ddl``), the connection (``postgres``) and a month replaced in one transaction (``month``)."""
