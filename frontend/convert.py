"""``python -m ember.convert SRC DST``: convert a checkpoint between PyTorch's format
(``.pt``, ``.pth``, ``.bin``, ``.ckpt``: what ``torch.save`` writes and ``torch.load``
reads) and safetensors (``.safetensors``), without importing torch.

::

    python -m ember.convert model.pt model.safetensors
    python -m ember.convert checkpoint.pt weights.safetensors --key state_dict
    python -m ember.convert model.safetensors model.pt

The source is loaded with ``weights_only=True`` (a file cannot run code). Safetensors
holds a flat dict of tensors: a checkpoint that nests its state dict (``{"model": ...,
"optimizer": ...}``) needs ``--key`` to name the entry to convert; the error lists the
candidates. Tensors that share memory (tied weights) are written as separate copies, as
safetensors requires.
"""
from __future__ import annotations

import argparse
import os
import pickle
import sys

from ._tensor import Tensor
from .serialization import load, save, save_safetensors

__all__ = ["convert", "main"]

_TORCH_SUFFIXES = (".pt", ".pth", ".bin", ".ckpt")


def _kind(path: str, what: str) -> str:
    low = path.lower()
    if low.endswith(".safetensors"):
        return "safetensors"
    if low.endswith(_TORCH_SUFFIXES):
        return "torch"
    raise ValueError(f"ember.convert: cannot tell the format of the {what} {path!r} from its "
                     f"name: use .safetensors or one of {', '.join(_TORCH_SUFFIXES)}")


def _tensor_dicts(obj, prefix="") -> list:
    """The keys (dotted) of the dicts of tensors inside ``obj``."""
    out = []
    if isinstance(obj, dict):
        if obj and all(isinstance(v, Tensor) for v in obj.values()):
            out.append(prefix or "(the whole file)")
        for k, v in obj.items():
            if isinstance(v, dict):
                out += _tensor_dicts(v, f"{prefix}.{k}" if prefix else str(k))
    return out


def convert(src: str, dst: str, key: str | None = None) -> dict:
    """Convert the checkpoint ``src`` into ``dst`` (formats from the file names); returns
    the dict of tensors written."""
    _kind(src, "source")        # (a name that says no format is refused before reading)
    dst_kind = _kind(dst, "destination")
    obj = load(src, map_location="cpu", weights_only=True)   # (reads safetensors too)
    if key is not None:
        for part in key.split("."):
            if not isinstance(obj, dict) or part not in obj:
                raise KeyError(f"ember.convert: {src!r} has no entry {key!r} (dicts of "
                               f"tensors in it: {', '.join(_tensor_dicts(obj)) or 'none'})")
            obj = obj[part]
    if not isinstance(obj, dict) or not all(
            isinstance(k, str) and isinstance(v, Tensor) for k, v in obj.items()):
        found = _tensor_dicts(obj)
        raise ValueError(f"ember.convert: {src!r} is not a flat dict of tensors, which "
                         f"safetensors needs; name the entry to convert with --key "
                         f"(dicts of tensors in it: {', '.join(found) or 'none'})")
    if dst_kind == "safetensors":
        save_safetensors(dict(obj), dst)
    else:
        save(obj, dst)
    return obj


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m ember.convert",
        description="Convert a checkpoint between PyTorch's format and safetensors.")
    p.add_argument("src", help="the checkpoint to read (.pt/.pth/.bin/.ckpt or .safetensors)")
    p.add_argument("dst", help="the file to write (its suffix names the format)")
    p.add_argument("--key", help="the entry of a nested checkpoint to convert (dotted: "
                                 "model.state_dict)")
    args = p.parse_args(argv)
    if not os.path.exists(args.src):
        print(f"ember.convert: {args.src!r} does not exist", file=sys.stderr)
        return 2
    try:
        tensors = convert(args.src, args.dst, args.key)
    except (ValueError, KeyError) as e:
        print(e.args[0] if e.args else e, file=sys.stderr)
        return 2
    except pickle.UnpicklingError as e:    # (weights_only refused a global)
        print(f"ember.convert: {args.src!r} holds more than tensors and containers, and "
              f"loading it would run code: {e}", file=sys.stderr)
        return 2
    n = sum(t.numel() for t in tensors.values())
    print(f"{args.src} -> {args.dst}: {len(tensors)} tensors, {n} elements")
    return 0


if __name__ == "__main__":
    sys.exit(main())
