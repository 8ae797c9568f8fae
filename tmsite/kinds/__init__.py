"""The kinds this host has served: counted on real reads, flushed to the database in batches."""
