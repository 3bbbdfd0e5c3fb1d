"""Moved to ``hourtab.core.resources``; this name stays an alias of that module for existing imports."""

import sys

from hourtab.core import resources as _kernel_module

sys.modules[__name__] = _kernel_module
