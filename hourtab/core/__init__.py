"""The shared kernel: database base and sessions, account scoping, the error family, accounts, rate
limits, the blob store, package resources and the safe PDF renderer.

No Flask and no domain here: ``hourtab.timesheets``, ``hourtab.retainers``, ``hourtab.statements`` and
``incidents`` build on the kernel, never the other way round (``tests/test_layering.py`` checks it).
"""
