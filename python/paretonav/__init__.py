"""paretonav from Python: export a PyTorch model, tune it with the bundled binary, load it back.

    import paretonav
    result = paretonav.tune(model, data={...}, inputs=["x"], outputs=[...],
                            tasks=["seg:nll:seg_logp:seg", ...], criterion="...", steps=300)

See docs/python.md for the reference.
"""

from typing import TYPE_CHECKING, Any, Optional, Sequence

from ._run import ParetonavWarning
from ._types import PathArg
from ._version import __version__
from .api import (EvalResult, FrontModel, FrontResult, TuneResult, evaluate, front, inspect, load_weights, tune,
                  untrained)
from .errors import CLIError, MappingError, ParetonavError
from .statedict import StateDictMapping, map_state_dict, onnx_values
from .tasks import LOSSES, Task

if TYPE_CHECKING:
    import torch


def export(module: "torch.nn.Module", example_inputs: Sequence[Any], path: PathArg, inputs: Sequence[str],
           outputs: Sequence[str], opset: Optional[int] = None) -> str:
    """Exports ``module`` to ``path`` the way paretonav trains it (see docs/python.md, "Export")."""
    from ._export import export as _export

    return _export(module, example_inputs, path, inputs, outputs, opset=opset)


__all__ = [
    "tune", "front", "evaluate", "inspect", "export", "load_weights", "untrained", "Task", "LOSSES",
    "TuneResult", "FrontResult", "FrontModel", "EvalResult",
    "ParetonavError", "CLIError", "MappingError", "ParetonavWarning",
    "map_state_dict", "onnx_values", "StateDictMapping", "__version__",
]
