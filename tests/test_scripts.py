"""``scripts/install.sh`` (run by ``start.sh`` and ``test.sh``) waits for another apt's lock instead of failing.

The apt-get here is a stand-in on ``PATH`` that answers the way apt does while another process
holds the lock; the real one needs root and would disturb the machine's own package manager.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCKED = "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (apt-get)"


def _fake_apt(tmp_path: Path, locked_calls: int, error: str = LOCKED) -> Path:
    """An apt-get that fails ``locked_calls`` times with ``error``, then succeeds; calls are counted."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "apt-get"
    script.write_text(f"""#!/usr/bin/env bash
echo "$*" >> "{tmp_path}/calls"
if [ "$(wc -l < "{tmp_path}/calls")" -le {locked_calls} ]; then
  echo "{error}" >&2
  exit 100
fi
echo "installed $*"
""")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return bin_dir


def _run(tmp_path: Path, bin_dir: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(ROOT / "scripts" / "apt_get.sh"), "install", "-y", "chromium"],
                          env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "HOURTAB_APT_RETRY_S": "0",
                               **env}, capture_output=True, text=True, timeout=60)


def _calls(tmp_path: Path) -> list[str]:
    return (tmp_path / "calls").read_text().splitlines()


def test_a_held_lock_is_waited_for(tmp_path):
    result = _run(tmp_path, _fake_apt(tmp_path, locked_calls=2))
    assert result.returncode == 0, result.stderr
    assert len(_calls(tmp_path)) == 3 and all(c.endswith("install -y chromium") for c in _calls(tmp_path))
    assert "Waiting for another package manager" in result.stderr
    assert "installed" in result.stdout


def test_other_failures_are_returned_at_once(tmp_path):
    result = _run(tmp_path, _fake_apt(tmp_path, locked_calls=5, error="E: Unable to locate package chromium"))
    assert result.returncode == 100 and len(_calls(tmp_path)) == 1
    assert "Unable to locate package chromium" in result.stderr


def test_the_wait_is_bounded(tmp_path):
    result = _run(tmp_path, _fake_apt(tmp_path, locked_calls=1000), HOURTAB_APT_WAIT_S="0")
    assert result.returncode == 100 and len(_calls(tmp_path)) == 1
    assert "still holds the lock" in result.stderr


def test_install_goes_through_the_waiting_wrapper():
    install = (ROOT / "scripts" / "install.sh").read_text()
    assert "scripts/apt_get.sh update" in install and "scripts/apt_get.sh install" in install
    assert "apt-get update" not in install.replace("scripts/apt_get.sh", "")
