"""ML-training incident domain: W&B and profiler ingestion, diagnosis, reports, the reproducer.

Never imports Flask; torch and transformers are imported lazily inside the functions that need
them so the web process starts without the ``repro`` extra.
"""
