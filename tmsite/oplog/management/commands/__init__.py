"""``tm_purge_log``: the request log's retention, on demand."""
