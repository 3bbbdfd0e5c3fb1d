"""Moved to ``hourtab.core.accounts``; this name stays an alias of that module for existing imports."""

import sys

from hourtab.core import accounts as _kernel_module

sys.modules[__name__] = _kernel_module
