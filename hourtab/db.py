"""Moved to ``hourtab.core.db``; this name stays an alias of that module for existing imports."""

import sys

from hourtab.core import db as _kernel_module

sys.modules[__name__] = _kernel_module
