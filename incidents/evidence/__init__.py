"""Evidence: W&B runs and profiler captures as uploaded, parsed once and stored (Parquet in blob
storage, one ``evidence`` row each). Ingest goes through :mod:`incidents.evidence.service`."""
