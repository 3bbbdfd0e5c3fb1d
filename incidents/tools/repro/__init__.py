"""The bundled BERT watch-overhead reproducer (``hourtab repro``).

Measures what ``wandb.watch`` costs a BERT training step against a baseline on the machine it runs
on. Importing this package loads neither torch nor transformers; the functions that train do.
"""
