"""Where the bundled binary is, and the console-script launcher."""

from __future__ import annotations

import os
import sys

from .errors import ParetonavError

__all__ = ["binary", "main"]


def binary() -> str:
    """The paretonav executable: $PARETONAV_BINARY if set, else the one this
    wheel carries (paretonav/bin/paretonav)."""
    env = os.environ.get("PARETONAV_BINARY")
    if env:
        if not os.access(env, os.X_OK):
            raise ParetonavError("PARETONAV_BINARY=%s is not an executable file" % env)
        return env
    exe = "paretonav.exe" if os.name == "nt" else "paretonav"
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", exe)
    if not os.access(path, os.X_OK):
        raise ParetonavError(
            "the paretonav binary is missing from this installation (%s): install a platform wheel "
            "(bash python/build_wheel.sh builds one) or set PARETONAV_BINARY to a paretonav executable" % path)
    return path


def main() -> None:
    """The ``paretonav`` console script: replaces this process with the binary."""
    try:
        exe = binary()
    except ParetonavError as e:
        sys.stderr.write("paretonav: %s\n" % e)
        sys.exit(2)
    if os.name == "nt":  # no exec on Windows: run and pass the status on
        import subprocess

        sys.exit(subprocess.call([exe] + sys.argv[1:]))
    os.execv(exe, [exe] + sys.argv[1:])
