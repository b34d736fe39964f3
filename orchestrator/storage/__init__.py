"""The results store: the versioned Parquet schema, the store API and the running-jobs file."""

# Here rather than in store.py so that the CLI can show the default without importing pyarrow.
DEFAULT_STORE = "./orch-results"
