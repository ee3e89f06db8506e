"""``ember.onnx.errors``: the exceptions of ONNX export (as ``torch.onnx.errors``)."""
from __future__ import annotations

__all__ = ["OnnxExporterError"]


class OnnxExporterError(RuntimeError):
    """Raised when a model cannot be captured for export."""
