"""``weights_only`` loading: the allowlist of globals and the restricted unpickler.

PyTorch >= 2.6 loads checkpoints with ``weights_only=True`` by default: the pickle is run
by an interpreter of its own that builds only containers and primitive values and calls
only allowlisted globals (tensor rebuilds, dtypes, sizes, devices, OrderedDict, ...) plus
those the user marks safe with :func:`add_safe_globals`. This module is ember's: the
``torch.*`` names map to ember's equivalents (``ember._torch_format.TORCH_NAMES``), so a
torch checkpoint loads without torch, and a crafted file can't reach any other code.
``weights_only=False`` uses :class:`FullUnpickler`, Python's unpickler, which runs whatever
the file says.
"""
from __future__ import annotations

import _compat_pickle
import collections
import contextlib
import pickle
import struct
from typing import Callable

import ember
from ember.dispatcher import dtypes as D
from ember.nn.parameter import Parameter

from ._torch_format import BUILTIN_SAFE, TORCH_NAMES, StorageType, check_plain_args

__all__ = ["add_safe_globals", "clear_safe_globals", "get_safe_globals", "safe_globals",
           "WeightsUnpickler", "FullUnpickler"]


# ---- the user's allowlist -------------------------------------------------------------------
_user_safe: dict = {}   # obj or (obj, name) -> None (insertion ordered)


def _global_name(entry) -> str:
    if isinstance(entry, tuple):
        if len(entry) != 2 or not isinstance(entry[1], str):
            raise TypeError("add_safe_globals: a tuple entry must be (obj, 'module.name')")
        return entry[1]
    mod, qual = getattr(entry, "__module__", None), getattr(entry, "__qualname__", None)
    if not isinstance(mod, str) or not isinstance(qual, str):
        raise TypeError(f"add_safe_globals: {entry!r} has no __module__/__qualname__; pass "
                        "(obj, 'module.name') instead")
    return f"{mod}.{qual}"


def add_safe_globals(safe_globals: list) -> None:
    """Mark classes and functions as safe to load with ``weights_only=True``: a checkpoint may
    then construct those classes (``__new__``, ``__setstate__`` or ``__dict__`` updates) and
    call those functions. Entries are objects, or ``(obj, "module.name")`` pairs to allow an
    object under a name other than its own.

    >>> import ember
    >>> class Config: pass
    >>> ember.serialization.add_safe_globals([Config])
    """
    if not isinstance(safe_globals, (list, tuple, set)):
        raise TypeError(f"add_safe_globals expects a list, got {type(safe_globals).__name__}")
    for g in safe_globals:
        _global_name(g)
        _user_safe[g] = None


def get_safe_globals() -> list:
    """The globals :func:`add_safe_globals` marked safe, in the order they were added."""
    return list(_user_safe)


def clear_safe_globals() -> None:
    """Forget every global :func:`add_safe_globals` marked safe."""
    _user_safe.clear()


class safe_globals(contextlib.ContextDecorator):
    """Within ``with ember.serialization.safe_globals([...]):`` these globals are safe for
    ``weights_only=True`` loads; on exit the allowlist is as before."""

    def __init__(self, safe_globals: list):
        self.safe_globals = list(safe_globals)
        self._added: list = []

    def __enter__(self):
        self._added = [g for g in self.safe_globals if g not in _user_safe]
        add_safe_globals(self.safe_globals)
        return self

    def __exit__(self, *exc):
        for g in self._added:
            _user_safe.pop(g, None)
        return False


def _user_allowed() -> dict:
    return {_global_name(g): (g[0] if isinstance(g, tuple) else g) for g in _user_safe}


def _py2_name(module: str, name: str) -> tuple:
    """Protocol 2 writes Python 2 names (``__builtin__.set``); the Python 3 ones."""
    if (module, name) in _compat_pickle.NAME_MAPPING:
        return _compat_pickle.NAME_MAPPING[(module, name)]
    return _compat_pickle.IMPORT_MAPPING.get(module, module), name


# ---- the weights-only unpickler -------------------------------------------------------------
def _unsupported_global(full: str) -> pickle.UnpicklingError:
    return pickle.UnpicklingError(
        f"Unsupported global: GLOBAL {full} was not an allowed global by default. Please use "
        f"`{D.module_name}.serialization.add_safe_globals([{full}])` or the "
        f"`{D.module_name}.serialization.safe_globals([{full}])` context manager to allowlist "
        "this global if you trust this class/function.")


_SAFE_TYPES = (dict, collections.OrderedDict, collections.Counter)


class WeightsUnpickler:
    """Interprets a pickle's opcodes itself (as PyTorch's weights-only unpickler does) so that
    the only code a file reaches is the allowlisted globals: ``REDUCE`` calls only them,
    ``NEWOBJ`` instantiates only allowlisted classes, ``BUILD`` updates only OrderedDicts and
    allowlisted objects, and INST, OBJ, EXT* and text persistent ids are refused. Every
    length is checked against the bytes left before it is read."""

    def __init__(self, data: bytes, persistent_load: Callable, encoding: str = "ASCII"):
        self.data = memoryview(data)
        self.pos = 0
        self.persistent_load = persistent_load
        self.encoding = encoding
        self.allowed = dict(TORCH_NAMES)
        self.allowed.update(BUILTIN_SAFE)
        self.user = _user_allowed()
        self.allowed.update(self.user)
        self.callables = {id(v): v for v in self.allowed.values()}
        self.user_ids = {id(v) for v in self.user.values()}

    # reading
    def _take(self, n: int) -> memoryview:
        if n < 0 or n > len(self.data) - self.pos:
            raise pickle.UnpicklingError(f"pickle data was truncated (an opcode at byte "
                                         f"{self.pos} needs {n} bytes, "
                                         f"{len(self.data) - self.pos} are left)")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def _line(self) -> bytes:
        end = bytes(self.data[self.pos:self.pos + 65536]).find(b"\n")
        if end < 0:
            raise pickle.UnpicklingError("pickle data was truncated (a line without newline)")
        out = bytes(self.data[self.pos:self.pos + end])
        self.pos += end + 1
        return out

    def _uint(self, n: int) -> int:
        return int.from_bytes(self._take(n), "little")

    def _global(self, module: str, name: str):
        module, name = _py2_name(module, name)
        full = f"{module}.{name}"
        if full in self.allowed:
            return self.allowed[full]
        raise _unsupported_global(full)

    def load(self):
        stack: list = []
        marks: list = []
        memo: dict = {}

        def pop_mark():
            if not marks:
                raise pickle.UnpicklingError("could not find MARK")
            m = marks.pop()
            items = stack[m:]
            del stack[m:]
            return items

        while True:
            if self.pos >= len(self.data):
                raise pickle.UnpicklingError("pickle data was truncated (no STOP opcode)")
            op = self.data[self.pos:self.pos + 1].tobytes()
            self.pos += 1
            if op == pickle.STOP:
                if len(stack) != 1:
                    raise pickle.UnpicklingError("STOP with a malformed stack")
                return stack[0]
            handler = _OPS.get(op)
            if handler is None:
                raise pickle.UnpicklingError(
                    f"Unsupported operand {op[0]} ({op!r}) at byte {self.pos - 1}: a weights-only "
                    "load accepts the opcodes of containers, primitive values, allowlisted "
                    "globals and storages only")
            handler(self, op, stack, marks, memo, pop_mark)

    def call(self, func, args):
        if id(func) not in self.callables or not callable(func) or \
                isinstance(func, (StorageType, D.DType)):
            raise pickle.UnpicklingError(f"Trying to call reduce for unrecognized function "
                                         f"{str(func)[:80]}")
        if not isinstance(args, tuple):
            raise pickle.UnpicklingError("REDUCE's arguments are not a tuple")
        return func(*args)

    def newobj(self, cls, args, kwargs=None):
        if not isinstance(args, tuple) or (kwargs is not None and not isinstance(kwargs, dict)):
            raise pickle.UnpicklingError("NEWOBJ's arguments are not a tuple")
        if cls is Parameter:
            return Parameter(*args, **(kwargs or {}))
        if id(cls) not in self.callables or not isinstance(cls, type) or \
                issubclass(cls, ember.Tensor):
            raise pickle.UnpicklingError(
                "Can only create new object for nn.Parameter or classes allowlisted via "
                f"`add_safe_globals` but got {str(cls)[:80]}")
        if id(cls) not in self.user_ids:
            check_plain_args(cls.__name__, args)
        return cls.__new__(cls, *args, **(kwargs or {}))

    def build(self, inst, state):
        if type(inst) is collections.OrderedDict:
            if not isinstance(state, dict) or \
                    not all(type(k) is str and not k.startswith("__") for k in state):
                raise pickle.UnpicklingError("BUILD of an OrderedDict with a state that is not "
                                             "a dict of plain attribute names")
            inst.__dict__.update(state)
            return
        if id(type(inst)) not in self.user_ids:
            raise pickle.UnpicklingError(
                "Can only build Tensor, Parameter, OrderedDict or types allowlisted via "
                f"`add_safe_globals`, but got {type(inst)}")
        if hasattr(inst, "__setstate__"):
            inst.__setstate__(state)
            return
        slotstate = None
        if isinstance(state, tuple) and len(state) == 2:
            state, slotstate = state
        if state:
            inst.__dict__.update(state)
        if slotstate:
            for k, v in slotstate.items():
                setattr(inst, k, v)


def _op_table() -> dict:
    P = pickle
    ops: dict = {}

    def reg(*codes):
        def deco(fn):
            for c in codes:
                ops[c] = fn
            return fn
        return deco

    @reg(P.PROTO)
    def _proto(u, op, st, mk, memo, pm):
        if u._uint(1) > 5:
            raise pickle.UnpicklingError("unsupported pickle protocol")

    @reg(P.FRAME)
    def _frame(u, op, st, mk, memo, pm):
        u._uint(8)

    @reg(P.MARK)
    def _mark(u, op, st, mk, memo, pm):
        mk.append(len(st))

    @reg(P.POP)
    def _pop(u, op, st, mk, memo, pm):
        if mk and mk[-1] == len(st):
            mk.pop()
        elif st:
            st.pop()
        else:
            raise pickle.UnpicklingError("POP from an empty stack")

    @reg(P.POP_MARK)
    def _pop_mark(u, op, st, mk, memo, pm):
        pm()

    @reg(P.DUP)
    def _dup(u, op, st, mk, memo, pm):
        st.append(_top(st))

    @reg(P.NONE, P.NEWTRUE, P.NEWFALSE)
    def _const(u, op, st, mk, memo, pm):
        st.append({P.NONE: None, P.NEWTRUE: True, P.NEWFALSE: False}[op])

    @reg(P.BININT, P.BININT1, P.BININT2)
    def _binint(u, op, st, mk, memo, pm):
        n = {P.BININT: 4, P.BININT1: 1, P.BININT2: 2}[op]
        st.append(int.from_bytes(u._take(n), "little", signed=op == P.BININT))

    @reg(P.LONG1, P.LONG4)
    def _long(u, op, st, mk, memo, pm):
        n = u._uint(1 if op == P.LONG1 else 4)
        if n > 4096:
            raise pickle.UnpicklingError(f"a LONG of {n} bytes is too large")
        st.append(int.from_bytes(u._take(n), "little", signed=True))

    @reg(P.INT, P.LONG)
    def _textint(u, op, st, mk, memo, pm):
        line = u._line()
        if op == P.INT and line in (b"00", b"01"):
            st.append(line == b"01")
            return
        if len(line) > 4096:
            raise pickle.UnpicklingError("a text integer is too long")
        try:
            st.append(int(line.rstrip(b"L")))
        except ValueError:
            raise pickle.UnpicklingError(f"invalid integer {line[:40]!r}") from None

    @reg(P.BINFLOAT)
    def _binfloat(u, op, st, mk, memo, pm):
        st.append(struct.unpack(">d", u._take(8))[0])

    @reg(P.FLOAT)
    def _float(u, op, st, mk, memo, pm):
        try:
            st.append(float(u._line()))
        except ValueError:
            raise pickle.UnpicklingError("invalid FLOAT") from None

    @reg(P.BINUNICODE, P.SHORT_BINUNICODE, P.BINUNICODE8)
    def _unicode(u, op, st, mk, memo, pm):
        n = u._uint({P.BINUNICODE: 4, P.SHORT_BINUNICODE: 1, P.BINUNICODE8: 8}[op])
        st.append(str(u._take(n), "utf-8", "surrogatepass"))

    @reg(P.UNICODE)
    def _text_unicode(u, op, st, mk, memo, pm):
        st.append(str(u._line(), "raw-unicode-escape"))

    @reg(P.BINBYTES, P.SHORT_BINBYTES, P.BINBYTES8, P.BYTEARRAY8)
    def _bytes(u, op, st, mk, memo, pm):
        n = u._uint({P.BINBYTES: 4, P.SHORT_BINBYTES: 1, P.BINBYTES8: 8, P.BYTEARRAY8: 8}[op])
        data = u._take(n)
        st.append(bytearray(data) if op == P.BYTEARRAY8 else bytes(data))

    @reg(P.BINSTRING, P.SHORT_BINSTRING)
    def _binstring(u, op, st, mk, memo, pm):
        n = u._uint(1) if op == P.SHORT_BINSTRING else \
            int.from_bytes(u._take(4), "little", signed=True)
        data = bytes(u._take(n))
        st.append(data if u.encoding == "bytes" else data.decode(u.encoding))

    @reg(P.EMPTY_LIST, P.EMPTY_DICT, P.EMPTY_TUPLE, P.EMPTY_SET)
    def _empty(u, op, st, mk, memo, pm):
        st.append({P.EMPTY_LIST: list, P.EMPTY_DICT: dict, P.EMPTY_TUPLE: tuple,
                   P.EMPTY_SET: set}[op]())

    @reg(P.LIST)
    def _list(u, op, st, mk, memo, pm):
        st.append(pm())

    @reg(P.TUPLE)
    def _tuple(u, op, st, mk, memo, pm):
        st.append(tuple(pm()))

    @reg(P.TUPLE1, P.TUPLE2, P.TUPLE3)
    def _tuple_n(u, op, st, mk, memo, pm):
        n = {P.TUPLE1: 1, P.TUPLE2: 2, P.TUPLE3: 3}[op]
        if len(st) < n:
            raise pickle.UnpicklingError("TUPLE with too few items on the stack")
        items = tuple(st[-n:])
        del st[-n:]
        st.append(items)

    @reg(P.FROZENSET)
    def _frozenset(u, op, st, mk, memo, pm):
        st.append(frozenset(pm()))

    @reg(P.DICT)
    def _dict(u, op, st, mk, memo, pm):
        items = pm()
        if len(items) % 2:
            raise pickle.UnpicklingError("DICT with an odd number of items")
        st.append(dict(zip(items[::2], items[1::2])))

    @reg(P.APPEND, P.APPENDS)
    def _append(u, op, st, mk, memo, pm):
        items = pm() if op == P.APPENDS else [st.pop()] if st else []
        target = _top(st)
        if type(target) is not list:
            raise pickle.UnpicklingError(f"Can only append to lists, but got {type(target)}")
        target.extend(items)

    @reg(P.SETITEM, P.SETITEMS)
    def _setitems(u, op, st, mk, memo, pm):
        if op == P.SETITEMS:
            items = pm()
        else:
            if len(st) < 3:
                raise pickle.UnpicklingError("SETITEM with too few items on the stack")
            items = st[-2:]
            del st[-2:]
        target = _top(st)
        if type(target) not in _SAFE_TYPES or len(items) % 2:
            raise pickle.UnpicklingError(f"Can only set items of dicts, but got {type(target)}")
        for k, v in zip(items[::2], items[1::2]):
            target[k] = v

    @reg(P.ADDITEMS)
    def _additems(u, op, st, mk, memo, pm):
        items = pm()
        target = _top(st)
        if type(target) is not set:
            raise pickle.UnpicklingError(f"Can only add items to sets, but got {type(target)}")
        target.update(items)

    @reg(P.GLOBAL)
    def _global(u, op, st, mk, memo, pm):
        module = u._line().decode("utf-8", "replace")
        name = u._line().decode("utf-8", "replace")
        st.append(u._global(module, name))

    @reg(P.STACK_GLOBAL)
    def _stack_global(u, op, st, mk, memo, pm):
        if len(st) < 2 or not all(type(x) is str for x in st[-2:]):
            raise pickle.UnpicklingError("STACK_GLOBAL needs two strings")
        module, name = st[-2:]
        del st[-2:]
        st.append(u._global(module, name))

    @reg(P.REDUCE)
    def _reduce(u, op, st, mk, memo, pm):
        if len(st) < 2:
            raise pickle.UnpicklingError("REDUCE with too few items on the stack")
        args = st.pop()
        st[-1] = u.call(st[-1], args)

    @reg(P.NEWOBJ)
    def _newobj(u, op, st, mk, memo, pm):
        if len(st) < 2:
            raise pickle.UnpicklingError("NEWOBJ with too few items on the stack")
        args = st.pop()
        st[-1] = u.newobj(st[-1], args)

    @reg(P.NEWOBJ_EX)
    def _newobj_ex(u, op, st, mk, memo, pm):
        if len(st) < 3:
            raise pickle.UnpicklingError("NEWOBJ_EX with too few items on the stack")
        kwargs, args = st.pop(), st.pop()
        st[-1] = u.newobj(st[-1], args, kwargs)

    @reg(P.BUILD)
    def _build(u, op, st, mk, memo, pm):
        if len(st) < 2:
            raise pickle.UnpicklingError("BUILD with too few items on the stack")
        state = st.pop()
        u.build(st[-1], state)

    @reg(P.BINPERSID)
    def _binpersid(u, op, st, mk, memo, pm):
        if not st:
            raise pickle.UnpicklingError("BINPERSID on an empty stack")
        st[-1] = u.persistent_load(st[-1])

    @reg(P.PUT, P.BINPUT, P.LONG_BINPUT)
    def _put(u, op, st, mk, memo, pm):
        if op == P.PUT:
            try:
                i = int(u._line())
            except ValueError:
                raise pickle.UnpicklingError("invalid PUT index") from None
        else:
            i = u._uint(1 if op == P.BINPUT else 4)
        memo[i] = _top(st)

    @reg(P.MEMOIZE)
    def _memoize(u, op, st, mk, memo, pm):
        memo[len(memo)] = _top(st)

    @reg(P.GET, P.BINGET, P.LONG_BINGET)
    def _get(u, op, st, mk, memo, pm):
        if op == P.GET:
            try:
                i = int(u._line())
            except ValueError:
                raise pickle.UnpicklingError("invalid GET index") from None
        else:
            i = u._uint(1 if op == P.BINGET else 4)
        if i not in memo:
            raise pickle.UnpicklingError(f"Memo value not found at index {i}")
        st.append(memo[i])

    return ops


def _top(stack: list):
    if not stack:
        raise pickle.UnpicklingError("unpickling stack underflow")
    return stack[-1]


_OPS = _op_table()


class FullUnpickler(pickle.Unpickler):
    """``weights_only=False``: everything loads (and may run code); ``torch.*`` names map to
    ember's equivalents, and other torch modules to the ember module of the same path."""

    def __init__(self, file, persistent_load, **kwargs):
        super().__init__(file, **kwargs)
        self._persistent = persistent_load

    def persistent_load(self, pid):
        return self._persistent(pid)

    def find_class(self, module, name):
        hit = TORCH_NAMES.get(f"{module}.{name}")
        if hit is not None:
            return hit
        if module == "torch" or module.startswith("torch."):
            try:
                return super().find_class("ember" + module[5:], name)
            except (ImportError, AttributeError):
                raise pickle.UnpicklingError(
                    f"the checkpoint needs {module}.{name}, which has no ember equivalent "
                    "(ember never imports torch to load a checkpoint)") from None
        return super().find_class(module, name)
