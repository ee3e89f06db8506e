"""``torch.return_types``: the named tuples that ops with several results return
(``values, indices = x.max(1)``, ``torch.linalg.eigh(a).eigenvectors``).

Each is a ``tuple`` subclass with named fields, printed as PyTorch prints its structseqs
(the module-qualified name, then one ``field=value`` per line), and picklable by name.

>>> r = ember.tensor([[1., 3.], [4., 2.]]).max(1)
>>> r.indices.tolist(), r[0].tolist()
([1, 0], [3.0, 4.0])
"""
from __future__ import annotations

from collections import namedtuple

from ember.dispatcher import dtypes as D

__all__ = ["return_type"]


def _repr(self) -> str:
    body = ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self))
    # PyTorch's module name while ember.as_torch is installed (torch.return_types.max)
    return f"{D.module_name}.return_types.{type(self).__name__}(\n{body})"


def return_type(name: str, fields) -> type:
    """The named tuple ``ember.return_types.<name>`` with ``fields`` (made once; a second
    call with other fields is an error)."""
    cls = globals().get(name)
    if cls is not None:
        if list(cls._fields) != list(fields):
            raise ValueError(f"return_types.{name} has fields {cls._fields}, not {fields}")
        return cls
    base = namedtuple(name, fields)
    cls = type(name, (base,), {
        "__slots__": (), "__repr__": _repr, "__str__": _repr, "__module__": __name__,
        "__qualname__": name,
        "__doc__": f"``torch.return_types.{name}``: ({', '.join(fields)})."})
    globals()[name] = cls
    __all__.append(name)
    return cls
