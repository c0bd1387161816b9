"""conftest.py - puts $PTC_PYTHONPATH (<builddir>/python, set by meson test)
first on sys.path so `import ptc` finds the freshly built package; fails
clearly when it is unset and ptc is not importable otherwise."""
import os
import sys

import pytest

_path = os.environ.get("PTC_PYTHONPATH")
if _path:
    sys.path.insert(0, os.path.abspath(_path))

try:
    import ptc  # noqa: F401
except ImportError as exc:  # pragma: no cover - environment error
    raise pytest.UsageError(
        "cannot import ptc: set PTC_PYTHONPATH=<builddir>/python (meson test does) "
        f"or install the package ({exc})"
    ) from exc
