"""The SSE stream: a process-local hub that fans events out to open streams, and the
consumer that serves GET /api/events."""
