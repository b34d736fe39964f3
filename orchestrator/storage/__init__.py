"""The results store: the versioned Parquet schema, the store API and the running-jobs file."""
