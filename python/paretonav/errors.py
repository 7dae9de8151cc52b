"""The exceptions paretonav raises."""

from __future__ import annotations

from typing import List, Optional, Sequence

__all__ = ["ParetonavError", "CLIError", "MappingError"]


class ParetonavError(Exception):
    """Base class of paretonav's errors."""


class CLIError(ParetonavError):
    """The bundled binary failed: ``message`` is what it printed (its
    ``error:`` line, or its last lines), ``returncode`` its exit status,
    ``command`` the argument list it ran with, ``stderr`` all it printed."""

    def __init__(self, message: str, returncode: int, command: Sequence[str], stderr: str = "") -> None:
        super().__init__("%s (paretonav exited with status %d)" % (message, returncode))
        self.message = message
        self.returncode = returncode
        self.command = list(command)
        self.stderr = stderr


class MappingError(ParetonavError):
    """A parameter or buffer of the module has no counterpart in the ONNX
    model (``names`` lists them), so its tuned value could not be loaded back."""

    def __init__(self, message: str, names: Optional[List[str]] = None) -> None:
        super().__init__(message)
        self.names = list(names or [])
