"""Long work done off the request: a persisted row per job with its status, progress and error."""
