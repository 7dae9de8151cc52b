"""paretonav from Python: export a PyTorch model, tune it with the bundled binary, load it back."""

from .statedict import StateDictMapping, map_state_dict, onnx_values

__version__ = "0.1.0"
__all__ = ["StateDictMapping", "map_state_dict", "onnx_values"]
