"""Operating the box: the per-caller rate limit, the request log, health, structured logs.

``hooks`` is what the transports call; ``buckets`` holds the token bucket and its stores;
``costs`` prices a request by what it reads; ``recorder`` batches log rows into the database;
``health`` answers ``GET /api/v1/health``. Nothing here keeps who asked: the caller's address
is used in memory to find its bucket and is never written to the log, a log line or the
namespace.
"""
