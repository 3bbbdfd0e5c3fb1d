"""Tools for training code: fastwatch, the reproducer, the audit and the watchdog. Only these import
torch; evidence, diagnosis and writeups never import a tool (``tests/incidents/test_rooms.py``)."""
