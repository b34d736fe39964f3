"""GraphLog: the world generator, the released jsonl reader, Parquet storage (GraphLog issue)."""
