"""
Environment switches shared by every part of parlai-docgraph (standard library only), and
:func:`run_record`, what a result file records about the run that wrote it.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, Optional

#: any of these set to 1/true/yes/on means: never reach a hub or dataset server
OFFLINE_VARIABLES = ("PARLAI_DOCGRAPH_OFFLINE", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")


def offline() -> bool:
    """
    True when the environment asks for offline operation (one rule for datasets,
    encoders and responders alike).
    """
    return any(
        os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")
        for name in OFFLINE_VARIABLES
    )


def source_commit() -> Optional[str]:
    """The git commit of the source tree the package runs from (``None`` outside a clone)."""
    try:
        done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, cwd=Path(__file__).resolve().parent, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return (done.stdout.strip() or None) if done.returncode == 0 else None


def run_record() -> Dict[str, Optional[str]]:
    """The command line, commit, UTC time and machine of this run (for result files)."""
    return {"command": " ".join([Path(sys.argv[0]).name] + sys.argv[1:]),
            "commit": source_commit(),
            "time_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python "
                       f"{platform.python_version()}"}
