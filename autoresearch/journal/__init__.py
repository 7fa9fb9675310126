"""The journal: record schema, durable store, tolerant line reader, review index."""
