"""Model files: save and load any silva estimator without pickle.

A model file (format ``silva-model``, version :data:`FORMAT_VERSION`; the full description
is ``docs/model-format.md``) is a zip archive of

- ``model.json``: metadata (format, versions, the estimator's class and parameters) and
  the estimator's state as a JSON tree of tagged values;
- ``arrays/<n>.npy``: every numpy array of that state, written by :func:`numpy.save` with
  ``allow_pickle=False``;
- ``pickles/<n>.pkl``: only when saved with ``allow_pickle=True``, objects of foreign
  (non-silva) classes, such as a scikit-learn final estimator of a stacking ensemble;
- ``manifest.json``: the SHA-256 and size of every other member;
- the archive comment, which ends the file: ``silva-model sha256=`` and the SHA-256 of
  every byte of the file before the digest.

Estimators are stored generically, so a new silva estimator needs no code here: an object
of a class defined under ``silva.`` (or registered with :func:`register_safe_class`) is
stored as its class path and its instance state (``__getstate__``, i.e. ``__dict__``:
parameters, fitted attributes ending in ``_`` and private state such as ``_encoder``),
recursively. State values may be None, bools, ints, floats (NaN and infinities too),
strings, numpy arrays of any non-object dtype, object arrays of such values, numpy
scalars, dtypes and scalar types, ``RandomState`` objects, lists, tuples, sets, dicts with
any such keys, scikit-learn ``Bunch`` objects, and further silva objects. Shared
references (one array or tree reachable twice) are stored once and loaded as one object.

Loading never executes code from the file: arrays are read with ``allow_pickle=False``,
and only classes under ``silva.`` (or registered) are instantiated, by ``cls.__new__`` and
``__setstate__``/``__dict__`` as pickle does, without calling ``__init__``. A file holding
pickles is refused unless ``load(..., allow_pickle=True)``. Every member's checksum is
verified before anything is decoded, so a truncated or corrupted file raises a
``ValueError``; members are decompressed in chunks within the sizes the manifest
declares and a total limit (``max_uncompressed_size``, by default 100 times the file's
size), so a small file cannot expand into gigabytes. Checksums catch accidents and naive
edits, not someone who recomputes them: so the decoded model's structure is checked too
(:mod:`silva._model_checks`: every tree's arrays, dtypes, children, features and values,
and their agreement with the estimators), and a crafted file is refused with a
``ValueError`` rather than crash, hang or mislead the compiled prediction code. Such a
file can still encode a different model (other thresholds or leaf values) than the one
its author saved.

Writes are atomic: the file is written to a temporary file in the target's directory and
moved over the target with :func:`os.replace`, so a crash never leaves a half-written
model under the target name.

Finding the trees in a model is :mod:`silva.tree_walk`; readable JSON dumps of them are
:mod:`silva.export_json` (``iter_trees``, ``dump_json`` and ``trees_to_dict`` are still
importable from here).
"""

from __future__ import annotations

import builtins
import hashlib
import importlib
import io
import json
import math
import os
import pickle
import tempfile
import zipfile
from typing import Any

import numpy as np

from silva._model_checks import (
    CheckContext,
    ModelFileError,
    check_model,
    check_packed_state,
    check_state_keys,
    check_view_state,
)
from silva.engine.ensemble import PackedTrees, PackedTreeView

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "PersistenceMixin",
    "atomic_write",
    "class_path",
    "load",
    "read_metadata",
    "readable_value",
    "register_safe_class",
    "save",
    "stored_by_state",
]

# Names that lived here before tree walking and JSON dumps had modules of their own.
_MOVED = {"iter_trees": "silva.tree_walk", "dump_json": "silva.export_json",
          "trees_to_dict": "silva.export_json", "tree_to_dict": "silva.export_json"}


def __getattr__(name):
    module_name = _MOVED.get(name)
    if module_name is None:
        raise AttributeError(f"module 'silva.persistence' has no attribute {name!r}")
    return getattr(importlib.import_module(module_name), name)

FORMAT_NAME = "silva-model"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
MODEL_JSON = "model.json"
_COMMENT_PREFIX = b"silva-model sha256="
_DIGEST_LENGTH = 64
# Fixed member timestamps make the bytes of a file depend on the model only.
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)
_COMPRESS_LEVEL = 1

_SAFE_CLASSES: dict[str, type] = {}

# Type objects that may appear as values (a ``dtype=np.float32`` parameter, say): Python's
# and numpy's scalar types, by name. Only these are looked up at load.
_SCALAR_TYPES: dict[str, type] = {
    **{name: getattr(builtins, name)
       for name in ("bool", "int", "float", "complex", "str", "bytes", "object")},
    **{f"numpy.{name}": getattr(np, name) for name in (
        "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
        "float16", "float32", "float64", "longdouble", "complex64", "complex128",
        "str_", "bytes_", "object_", "datetime64", "timedelta64", "intp", "uintp")},
}
_SCALAR_TYPE_NAMES = {cls: name for name, cls in reversed(list(_SCALAR_TYPES.items()))}


def register_safe_class(cls):
    """Allow objects of ``cls`` (a class outside ``silva.``) in model files without pickle.

    Their state is stored like a silva estimator's, and :func:`load` may instantiate the
    class (with ``__new__``, without ``__init__``). Register only classes whose
    ``__setstate__`` (if any) is safe to run on untrusted data: subclasses of silva
    estimators written by users, or plugins. Returns ``cls``, so it works as a decorator.
    """
    if not isinstance(cls, type):
        raise TypeError(f"register_safe_class needs a class; got {cls!r}.")
    _SAFE_CLASSES[class_path(cls)] = cls
    return cls


def class_path(cls):
    """``module.QualifiedName`` of ``cls``, as model files name classes."""
    return f"{cls.__module__}.{cls.__qualname__}"


def _is_silva_class(cls):
    module = getattr(cls, "__module__", "") or ""
    return module == "silva" or module.startswith("silva.")


def stored_by_state(cls):
    """Whether objects of ``cls`` are stored as class path + state (else pickle or fail)."""
    return ((_is_silva_class(cls) and "<locals>" not in cls.__qualname__)
            or _SAFE_CLASSES.get(class_path(cls)) is cls)


def _resolve_class(path, where):
    """The class named ``path`` in a file, if it may be instantiated; else ValueError."""
    if path in _SAFE_CLASSES:
        return _SAFE_CLASSES[path]
    module_name, _, name = path.rpartition(".")
    if not (module_name == "silva" or module_name.startswith("silva.")) or not name:
        raise ValueError(
            f"the model file asks for the class {path!r} at {where}; only silva classes (and "
            "classes passed to silva.persistence.register_safe_class) are instantiated "
            "from a model file.")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ValueError(f"the model file needs {path!r} (at {where}), which this silva "
                         f"cannot import: {error}. Was it saved by a newer silva?") from None
    cls = getattr(module, name, None)
    if not isinstance(cls, type) or not _is_silva_class(cls) or class_path(cls) != path:
        raise ValueError(f"the model file names {path!r} at {where}, which is not a silva "
                         "class.")
    return cls


# ------------------------------------------------------------------------ encoding
#
# The state becomes JSON in which Python's None, bools, ints, strings and lists stand
# for themselves and every other value is an object tagged by its "$" key:
#   {"$": "float", "value": "nan"}               non-finite float
#   {"$": "ndarray", "member": "arrays/3.npy"}   numpy array (non-object dtype)
#   {"$": "object_array", "shape": [..], "items": [..]}  object array of scalars
#   {"$": "scalar", "dtype": "<i8", "value": ..} numpy scalar
#   {"$": "dtype", "descr": "<f8"}               numpy dtype
#   {"$": "tuple" | "set", "items": [..]}
#   {"$": "dict", "items": [[key, value], ..]}
#   {"$": "bunch", "items": [[key, value], ..]}  sklearn.utils.Bunch
#   {"$": "type", "name": "numpy.float32"}       a Python or numpy scalar type
#   {"$": "random_state", "state": [..]}         numpy RandomState
#   {"$": "object", "class": "silva...", "id": n, "state": {..}}
#   {"$": "pickle", "class": "...", "member": "pickles/0.pkl", "id": n}
#   {"$": "ref", "id": n}                        the object stored earlier with id n
# Plain floats are JSON numbers (Python writes them with round-trip precision).


class _Encoder:
    def __init__(self, allow_pickle):
        self.allow_pickle = allow_pickle
        self.members: dict[str, bytes] = {}
        self.memo: dict[int, int] = {}
        self.keep_alive: list[Any] = []  # keeps ids in memo unique while encoding
        self.pickled: list[dict] = []
        self.n_arrays = 0
        self.n_pickles = 0

    def _remember(self, obj):
        identity = len(self.memo)
        self.memo[id(obj)] = identity
        self.keep_alive.append(obj)
        return identity

    def encode(self, value, where):
        if value is None or type(value) in (bool, int, str):
            return value
        if type(value) is float:
            if math.isfinite(value):
                return value
            return {"$": "float", "value": repr(value)}
        if isinstance(value, np.generic):
            return self._encode_scalar(value, where)
        if isinstance(value, np.dtype):
            return {"$": "dtype", "descr": _dtype_text(value, where)}
        if isinstance(value, type) and value in _SCALAR_TYPES.values():
            # e.g. ``dtype=np.float32`` parameters: a scalar type, not an instance
            return {"$": "type", "name": _SCALAR_TYPE_NAMES[value]}
        if id(value) in self.memo:
            return {"$": "ref", "id": self.memo[id(value)]}
        if isinstance(value, np.ndarray):
            return self._encode_array(value, where)
        if type(value) is list:
            return [self.encode(item, f"{where}[{i}]") for i, item in enumerate(value)]
        if type(value) is tuple:
            return {"$": "tuple",
                    "items": [self.encode(item, f"{where}[{i}]") for i, item in enumerate(value)]}
        if type(value) in (set, frozenset):
            items = sorted(value, key=repr)  # a deterministic file for the same set
            return {"$": "set", "items": [self.encode(item, f"{where}{{}}") for item in items]}
        if type(value) is dict:
            return {"$": "dict", "items": [
                [self.encode(key, f"{where} key"), self.encode(item, f"{where}[{key!r}]")]
                for key, item in value.items()]}
        if _is_bunch(value):
            # scikit-learn's attribute-access dict (``named_estimators_`` of voting and
            # stacking): rebuilt by this module, so no pickle is needed.
            return {"$": "bunch", "items": [
                [self.encode(key, f"{where} key"), self.encode(item, f"{where}[{key!r}]")]
                for key, item in value.items()]}
        if type(value) is np.random.RandomState:
            name, keys, pos, has_gauss, cached = value.get_state()
            identity = self._remember(value)
            return {"$": "random_state", "id": identity,
                    "state": [name, self._encode_array(keys, where), int(pos),
                              int(has_gauss), float(cached)]}
        if stored_by_state(type(value)):
            return self._encode_object(value, where)
        return self._encode_foreign(value, where)

    def _encode_scalar(self, value, where):
        dtype = value.dtype
        if dtype.kind in "biuf":
            item = value.item()
            if dtype.kind == "f" and not math.isfinite(item):
                item = repr(item)
            return {"$": "scalar", "dtype": dtype.str, "value": item}
        # Other numpy scalars (complex, datetime, bytes, ...) go through a 0-d array.
        return {"$": "scalar", "dtype": dtype.str,
                "array": self._encode_array(np.asarray(value), where)}

    def _encode_array(self, array, where):
        if array.dtype.hasobject:
            # Object arrays (feature names, string classes, arrays of estimators) are
            # stored element by element, so loading them needs no pickle.
            identity = self._remember(array)
            items = [self.encode(item, f"{where}[{i}]") for i, item in enumerate(array.ravel())]
            return {"$": "object_array", "id": identity, "shape": list(array.shape),
                    "items": items}
        name = f"arrays/{self.n_arrays}.npy"
        self.n_arrays += 1
        buffer = io.BytesIO()
        _dtype_text(array.dtype, where)
        np.save(buffer, np.asarray(array), allow_pickle=False)
        self.members[name] = buffer.getvalue()
        identity = self._remember(array)
        return {"$": "ndarray", "id": identity, "member": name}

    def _encode_object(self, obj, where):
        identity = self._remember(obj)
        state = obj.__getstate__() if hasattr(obj, "__getstate__") else vars(obj)
        if state is None:
            state = {}
        if type(state) is not dict:
            raise ValueError(f"cannot save {where}: {class_path(type(obj))}.__getstate__ "
                             "does not return a dict.")
        return {
            "$": "object",
            "class": class_path(type(obj)),
            "id": identity,
            "state": {str(key): self.encode(item, f"{where}.{key}")
                      for key, item in state.items()},
        }

    def _encode_foreign(self, obj, where):
        path = class_path(type(obj))
        if not self.allow_pickle:
            raise ValueError(
                f"cannot save {where}, an object of the non-silva class {path}, without "
                "pickle. Pass allow_pickle=True to save(...) to store it with pickle; "
                "loading the file will then need allow_pickle=True as well.")
        identity = self._remember(obj)
        name = f"pickles/{self.n_pickles}.pkl"
        self.n_pickles += 1
        try:
            self.members[name] = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as error:
            raise ValueError(f"cannot pickle {where} ({path}): {error}") from error
        self.pickled.append({"where": where, "class": path, "member": name})
        return {"$": "pickle", "class": path, "id": identity, "member": name}


def _is_bunch(value):
    from sklearn.utils import Bunch

    return type(value) is Bunch and all(type(key) is str for key in value)


def _dtype_text(dtype, where):
    if dtype.hasobject or dtype.fields is not None or dtype.subdtype is not None:
        raise ValueError(f"cannot save {where}: numpy dtype {dtype} is not supported.")
    return dtype.str


class _Decoder:
    """Turns the tagged JSON of ``model.json`` back into objects.

    Every failure is a :class:`~silva._model_checks.ModelFileError` (a ValueError) naming
    the attribute path: malformed values (wrong types, missing keys, integers too large
    for their dtype, nesting too deep) included, whatever exception first noticed them.
    """

    def __init__(self, read_member, allow_pickle):
        self.read_member = read_member
        self.allow_pickle = allow_pickle
        self.objects: dict[int, Any] = {}
        self.used_members: set[str] = set()
        # Which member each loaded array came from, for messages.
        self.array_members: dict[int, str] = {}
        self.context = CheckContext(describe=self._describe, walk_into=self._walk_into)

    def _describe(self, array):
        member = self.array_members.get(id(array))
        return f" ({member})" if member else ""

    @staticmethod
    def _walk_into(obj):
        return stored_by_state(type(obj))

    def _take_member(self, name, where):
        """Member ``name``, which no other value may use: silva stores each array once
        (shared ones by reference), and a member decoded many times would multiply its
        size past the limit on decompressed bytes."""
        if name in self.used_members:
            raise ModelFileError(f"malformed model file: member {name!r} is used twice (at "
                                 f"{where}).")
        self.used_members.add(name)
        return self.read_member(name)

    def _register(self, identity, obj, where):
        if type(identity) is not int or identity in self.objects:
            raise ModelFileError(f"malformed model file: duplicate or invalid id "
                                 f"{identity!r} at {where}.")
        self.objects[identity] = obj

    def decode(self, value, where):
        try:
            return self._decode(value, where)
        except ModelFileError:
            raise
        except RecursionError:
            raise ModelFileError(f"malformed model file: values nested too deeply at "
                                 f"{where}.") from None
        except MemoryError:
            raise
        except Exception as error:  # any other sign of a malformed value
            raise ModelFileError(f"malformed model file at {where}: "
                                 f"{type(error).__name__}: {error}") from None

    def _decode(self, value, where):
        if value is None or isinstance(value, bool | int | float | str):
            return value
        if isinstance(value, list):
            return [self.decode(item, f"{where}[{i}]") for i, item in enumerate(value)]
        if not isinstance(value, dict) or "$" not in value:
            raise ModelFileError(f"malformed model file: unexpected value at {where}.")
        tag = value["$"]
        if tag == "float":
            return float(_text(value["value"]))
        if tag == "scalar":
            dtype = np.dtype(_text(value["dtype"]))
            if "array" in value:
                return self.decode(value["array"], where)[()]
            if dtype.kind not in "biuf":
                raise ModelFileError(f"malformed model file: a {dtype} scalar without its "
                                     f"array at {where}.")
            item = value["value"]
            return dtype.type(float(item) if isinstance(item, str) else item)
        if tag == "dtype":
            return np.dtype(_text(value["descr"]))
        if tag == "type":
            try:
                return _SCALAR_TYPES[value["name"]]
            except (KeyError, TypeError):
                raise ModelFileError(f"malformed model file: unknown type {value['name']!r} "
                                     f"at {where}.") from None
        if tag == "tuple":
            return tuple(self.decode(item, where) for item in _items(value))
        if tag == "set":
            return {self.decode(item, where) for item in _items(value)}
        if tag == "dict":
            return {self.decode(key, where): self.decode(item, f"{where}[{key!r}]")
                    for key, item in _items(value)}
        if tag == "bunch":
            from sklearn.utils import Bunch

            return Bunch(**{self.decode(key, where): self.decode(item, f"{where}[{key!r}]")
                            for key, item in _items(value)})
        if tag == "ref":
            try:
                return self.objects[value["id"]]
            except (KeyError, TypeError):
                raise ModelFileError(f"malformed model file: dangling reference at "
                                     f"{where}.") from None
        if tag == "ndarray":
            member = _text(value["member"])
            data = self._take_member(member, where)
            try:
                array = np.load(io.BytesIO(data), allow_pickle=False)
            except ValueError as error:
                raise ModelFileError(f"model file member {member} is not a plain numpy "
                                     f"array: {error}") from None
            if not isinstance(array, np.ndarray) or array.dtype.fields is not None or (
                    array.dtype.itemsize == 0 and array.size):
                raise ModelFileError(f"model file member {member} (at {where}) holds a "
                                     f"numpy dtype this format does not use.")
            self._register(value["id"], array, where)
            self.array_members[id(array)] = member
            return array
        if tag == "object_array":
            items = _items(value)
            shape = value["shape"]
            if not isinstance(shape, list) or not all(
                    type(n) is int and n >= 0 for n in shape) or math.prod(shape) != len(items):
                raise ModelFileError(f"malformed model file: object array shape {shape!r} "
                                     f"does not hold its {len(items)} items at {where}.")
            array = np.empty(len(items), dtype=object)
            self._register(value["id"], array, where)
            for i, item in enumerate(items):
                array[i] = self.decode(item, f"{where}[{i}]")
            array = array.reshape(shape)
            self.objects[value["id"]] = array
            return array
        if tag == "random_state":
            name, keys, pos, has_gauss, cached = value["state"]
            state = np.random.RandomState()
            state.set_state((name, self.decode(keys, where), pos, has_gauss, cached))
            self._register(value["id"], state, where)
            return state
        if tag == "object":
            cls = _resolve_class(_text(value["class"]), where)
            obj = cls.__new__(cls)
            # Registered before its state is decoded, so cycles resolve to this object.
            self._register(value["id"], obj, where)
            encoded = value["state"]
            if not isinstance(encoded, dict):
                raise ModelFileError(f"malformed model file: the state at {where} is not "
                                     "an object.")
            check_state_keys(cls, encoded, where)
            state = {key: self.decode(item, f"{where}.{key}")
                     for key, item in encoded.items()}
            if cls is PackedTrees:
                # Its __setstate__ builds the walk records from the state: check first.
                check_packed_state(state, where, self.context)
            elif cls is PackedTreeView:
                check_view_state(state, where)
            setstate = getattr(cls, "__setstate__", None)
            if setstate is not None:
                obj.__setstate__(state)
            else:
                obj.__dict__.update(state)
            if cls is PackedTrees:
                self.context.checked_packings.add(id(obj))
            return obj
        if tag == "pickle":
            if not self.allow_pickle:  # checked up front by load(); kept as a safeguard
                raise ModelFileError(f"{where} is pickled; pass allow_pickle=True to load "
                                     "it.")
            obj = pickle.loads(self._take_member(_text(value["member"]), where))  # noqa: S301
            self._register(value["id"], obj, where)
            return obj
        raise ModelFileError(f"malformed model file: unknown tag {tag!r} at {where}.")


def _text(value):
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value


def _items(value):
    items = value["items"]
    if not isinstance(items, list):
        raise TypeError(f"expected a list of items, got {type(items).__name__}")
    return items


# ------------------------------------------------------------------------ save / load


def _sha256(data):
    return hashlib.sha256(data).hexdigest()


def readable_value(value):
    """A JSON-friendly, readable rendering of a parameter value (metadata only)."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return float(value) if math.isfinite(value) else repr(float(value))
    if isinstance(value, list | tuple):
        return [readable_value(item) for item in value]
    if isinstance(value, dict):
        return {str(key): readable_value(item) for key, item in value.items()}
    # No repr: it may hold a memory address, and the file should depend on the model only.
    return f"<{class_path(type(value))}>"


def _versions():
    import sklearn

    import silva

    return {"silva": getattr(silva, "__version__", "unknown"), "numpy": np.__version__,
            "scikit-learn": sklearn.__version__}


def save(model, path, *, allow_pickle=False, metadata=None):
    """Write ``model`` (any silva estimator, fitted or not) to the model file ``path``.

    Parameters
    ----------
    model : object
        A silva estimator (or any object of a silva or registered class).
    path : str or path-like, or a writable binary file object
        Target file; conventionally ``*.silva``. A path is written atomically (temporary
        file in the same directory, then :func:`os.replace`); a file object is written in
        place.
    allow_pickle : bool, default=False
        Store objects of foreign (non-silva) classes, e.g. a scikit-learn estimator inside
        a stacking ensemble, with pickle. Without it such objects raise a ValueError that
        names them. Loading such a file needs ``allow_pickle=True`` too.
    metadata : dict, default=None
        Extra JSON-serialisable information stored under ``"user"`` in ``model.json``
        (the command line stores the target column and the task there); see
        :func:`read_metadata`.

    Returns
    -------
    path : the ``path`` argument.

    Raises
    ------
    ValueError
        If part of the model cannot be stored (the message gives its attribute path, e.g.
        ``model.estimators_[3].callback``).
    """
    encoder = _Encoder(bool(allow_pickle))
    root = encoder.encode(model, "model")
    get_params = getattr(model, "get_params", None)
    params = readable_value(get_params(deep=False)) if callable(get_params) else None
    document = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "versions": _versions(),
        "estimator": class_path(type(model)),
        "params": params,
        "pickled": encoder.pickled,
        "user": metadata,
        "root": root,
    }
    try:
        model_json = json.dumps(document, indent=1, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError) as error:
        raise ValueError(f"metadata is not JSON-serialisable: {error}") from None
    data = _pack({MODEL_JSON: model_json, **encoder.members})
    if hasattr(path, "write"):
        path.write(data)
    else:
        atomic_write(os.fspath(path), lambda file: file.write(data))
    return path


def _pack(members):
    """The bytes of a model file holding ``members`` (name -> bytes), with its manifest
    of member checksums and, in the archive comment, the checksum of the whole file."""
    manifest = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "members": {name: {"sha256": _sha256(data), "size": len(data)}
                    for name, data in members.items()},
    }
    manifest_bytes = json.dumps(manifest, indent=1).encode("utf-8")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        # The comment ends the file; its digest is patched in once the rest is written.
        archive.comment = _COMMENT_PREFIX + b"0" * _DIGEST_LENGTH
        for name, data in [(MANIFEST, manifest_bytes), *members.items()]:
            info = zipfile.ZipInfo(name, date_time=_ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            # Level 1: tree arrays (small ints, repeated values) shrink several times at
            # level 1 already; higher levels cost several times the time for a few %.
            archive.writestr(info, data, compresslevel=_COMPRESS_LEVEL)
    data = bytearray(buffer.getvalue())
    data[-_DIGEST_LENGTH:] = _sha256(bytes(data[:-_DIGEST_LENGTH])).encode("ascii")
    return bytes(data)


def atomic_write(path, write):
    """Create or replace the file ``path`` with what ``write(file)`` writes, atomically:
    through a temporary file in the same directory, moved over ``path`` when complete."""
    directory = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.",
                                         suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            write(file)
            file.flush()
            os.fsync(file.fileno())
        # mkstemp creates the file readable by its owner only; give the model file the
        # mode of the file it replaces, or the usual one for a new file.
        try:
            mode = os.stat(path).st_mode & 0o777
        except FileNotFoundError:
            mode = 0o666 & ~_umask()
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass
        raise
    try:  # make the rename itself durable where the platform allows it
        directory_handle = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(directory_handle)
    except OSError:
        pass
    finally:
        os.close(directory_handle)


def _umask():
    mask = os.umask(0o022)  # reading the umask means setting it; restore at once
    os.umask(mask)
    return mask


# Decompressed size allowed by default: this many times the file's size, and at least
# _MIN_UNCOMPRESSED_LIMIT. Saved models measured 1.6x (an unfitted model) to 5.2x (a
# forest on a categorical column) uncompressed/file, single members up to 220x (deflate
# itself stops near 1030x); 100x leaves a wide margin for legitimate files while a
# crafted file cannot make loading take more than 100 times its size.
UNCOMPRESSED_RATIO = 100
_MIN_UNCOMPRESSED_LIMIT = 64 << 20
_READ_CHUNK = 1 << 20


class _VerifiedArchive:
    """An opened model file whose manifest and member checksums have been verified.

    Members are decompressed in chunks, each no larger than the size the manifest
    declares for it, and only while the total stays within ``max_uncompressed_size``.
    """

    def __init__(self, path, max_uncompressed_size=None):
        self.name = path if isinstance(path, str | os.PathLike) else getattr(path, "name",
                                                                             "<file>")
        try:
            if isinstance(path, str | os.PathLike):
                with open(path, "rb") as file:
                    raw = file.read()
            else:
                raw = path.read()
        except OSError as error:
            raise ValueError(f"cannot read the model file {self.name!s}: {error}") from None
        if max_uncompressed_size is None:
            self.limit = max(_MIN_UNCOMPRESSED_LIMIT, UNCOMPRESSED_RATIO * len(raw))
            self.limit_source = (f"the default limit, {UNCOMPRESSED_RATIO} times the file's "
                                 f"size or {_MIN_UNCOMPRESSED_LIMIT >> 20} MiB")
        else:
            self.limit = _check_size_limit(max_uncompressed_size)
            self.limit_source = "max_uncompressed_size"
        self.budget = self.limit
        # The file ends with the archive comment "silva-model sha256=<digest of all the
        # bytes before the digest>": any truncation or changed byte is caught here.
        trailer = len(_COMMENT_PREFIX) + _DIGEST_LENGTH
        if len(raw) < trailer or raw[-trailer:-_DIGEST_LENGTH] != _COMMENT_PREFIX:
            if raw[:4] != b"PK\x03\x04":
                raise ValueError(f"{self.name!s} is not a silva model file.")
            raise ValueError(f"{self.name!s} is not a silva model file, or it is truncated "
                             "(its closing checksum is missing).")
        expected = raw[-_DIGEST_LENGTH:].decode("ascii", "replace")
        if _sha256(raw[:-_DIGEST_LENGTH]) != expected:
            raise ValueError(f"{self.name!s} is corrupted or was modified: the file's "
                             "checksum does not match its content.")
        try:
            archive = zipfile.ZipFile(io.BytesIO(raw))
        except (zipfile.BadZipFile, ValueError, OSError, EOFError):
            raise ValueError(f"{self.name!s} is not a silva model file, or it is corrupted "
                             "(not a readable zip archive).") from None
        self.archive = archive
        names = set(archive.namelist())
        if MANIFEST not in names:
            raise ValueError(f"{self.name!s} is not a silva model file (no manifest).")
        info = archive.getinfo(MANIFEST)
        manifest_bytes = self._read(MANIFEST, info.file_size)
        try:
            manifest = json.loads(manifest_bytes)
            members = manifest["members"]
            version = manifest["format_version"]
        except (ValueError, KeyError, TypeError, RecursionError):
            raise ValueError(f"{self.name!s} has a malformed manifest.") from None
        if manifest.get("format") != FORMAT_NAME:
            raise ValueError(f"{self.name!s} is not a silva model file (format "
                             f"{manifest.get('format')!r}).")
        if type(version) is not int or version > FORMAT_VERSION:
            raise ValueError(f"{self.name!s} has model format version {version}; this silva "
                             f"reads versions up to {FORMAT_VERSION}. Upgrade silva.")
        if not isinstance(members, dict) or MODEL_JSON not in members or not all(
                isinstance(entry, dict) and type(entry.get("size")) is int
                and entry["size"] >= 0 and isinstance(entry.get("sha256"), str)
                for entry in members.values()):
            raise ValueError(f"{self.name!s} has a malformed manifest (each member needs "
                             "its size and sha256).")
        unexpected = names - set(members) - {MANIFEST}
        absent = set(members) - names
        if unexpected or absent:
            raise ValueError(f"{self.name!s} is corrupted or was modified: members "
                             f"{sorted(absent)} are missing and {sorted(unexpected)} are not "
                             "in the manifest.")
        declared = sum(entry["size"] for entry in members.values())
        if declared > self.budget:
            raise ValueError(
                f"{self.name!s} declares {declared} bytes of uncompressed members, more "
                f"than {self.limit} bytes ({self.limit_source}). If you trust this file, "
                f"load it with a larger max_uncompressed_size.")
        self.data = {}
        for name, entry in members.items():
            data = self._read(name, entry["size"])
            if _sha256(data) != entry["sha256"]:
                raise ValueError(f"{self.name!s} is corrupted or was modified: the checksum "
                                 f"of member {name!r} does not match.")
            self.data[name] = data
        try:
            self.document = json.loads(self.data[MODEL_JSON])
        except RecursionError:
            raise ValueError(f"{self.name!s} has a malformed {MODEL_JSON}: values nested too "
                             "deeply.") from None
        except ValueError:
            raise ValueError(f"{self.name!s} has no readable {MODEL_JSON}.") from None
        self._check_document(manifest)

    def _read(self, name, size):
        """Member ``name``, which must decompress to exactly ``size`` bytes: read in
        chunks, stopping as soon as it gives more, and counted against the budget."""
        info = self.archive.getinfo(name)
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise ValueError(f"{self.name!s}: member {name!r} uses a compression method "
                             "silva does not write.")
        if info.file_size != size:
            raise ValueError(f"{self.name!s} is corrupted or was modified: member {name!r} "
                             f"has {info.file_size} bytes in the archive, the manifest says "
                             f"{size}.")
        if size > self.budget:
            raise ValueError(
                f"{self.name!s}: member {name!r} would decompress to {size} bytes, over "
                f"the {self.limit} bytes allowed ({self.limit_source}). If you trust this "
                "file, load it with a larger max_uncompressed_size.")
        chunks = []
        total = 0
        try:
            with self.archive.open(info) as stream:
                while True:
                    chunk = stream.read(min(_READ_CHUNK, size - total + 1))
                    if not chunk:
                        break
                    total += len(chunk)
                    if total > size:
                        raise ValueError(f"{self.name!s} is corrupted or was modified: "
                                         f"member {name!r} decompresses to more than its "
                                         f"declared {size} bytes.")
                    chunks.append(chunk)
        except MemoryError:
            raise ValueError(f"not enough memory to read {self.name!s} (member {name!r}, "
                             f"{size} bytes).") from None
        except ValueError:
            raise
        except Exception as error:  # zlib.error, BadZipFile (CRC), EOFError, ...
            raise ValueError(f"{self.name!s} is truncated or corrupted (member {name!r}: "
                             f"{error}).") from None
        if total != size:
            raise ValueError(f"{self.name!s} is truncated or corrupted (member {name!r} "
                             f"holds {total} of its {size} bytes).")
        self.budget -= size
        return b"".join(chunks)

    def _check_document(self, manifest):
        """``model.json`` agrees with the manifest and names the class of its root."""
        document = self.document
        if not isinstance(document, dict):
            raise ValueError(f"{self.name!s} has a malformed {MODEL_JSON}: not an object.")
        if document.get("format") != manifest["format"] or \
                document.get("format_version") != manifest["format_version"] or \
                type(document.get("format_version")) is not int:
            raise ValueError(
                f"{self.name!s} is inconsistent: {MODEL_JSON} says format "
                f"{document.get('format')!r} version {document.get('format_version')!r}, "
                f"the manifest {manifest['format']!r} version {manifest['format_version']}.")
        pickled = document.get("pickled")
        if pickled is None:
            document["pickled"] = []
        elif not isinstance(pickled, list) or not all(
                isinstance(item, dict) and all(isinstance(item.get(key), str)
                                               for key in ("where", "class", "member"))
                for item in pickled):
            raise ValueError(f"{self.name!s} has a malformed {MODEL_JSON}: 'pickled' must "
                             "list objects with their where, class and member.")
        root = document.get("root")
        if root is not None:
            estimator = document.get("estimator")
            named = root.get("class") if isinstance(root, dict) else None
            if not isinstance(estimator, str) or estimator != named:
                raise ValueError(f"{self.name!s} is inconsistent: {MODEL_JSON} names the "
                                 f"estimator {estimator!r} but holds a {named!r}.")

    def member(self, name):
        try:
            return self.data[name]
        except (KeyError, TypeError):
            raise ModelFileError(f"{self.name!s} refers to a member {name!r} it does not "
                                 "hold.") from None


def _open_verified(path, max_uncompressed_size):
    try:
        return _VerifiedArchive(path, max_uncompressed_size)
    except MemoryError:
        name = path if isinstance(path, str | os.PathLike) else getattr(path, "name", "<file>")
        raise ValueError(f"not enough memory to read the model file {name!s}.") from None


def _check_size_limit(value):
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
        raise ValueError(f"max_uncompressed_size must be a non-negative number of bytes; "
                         f"got {value!r}.")
    return int(value)


def load(path, *, allow_pickle=False, max_uncompressed_size=None):
    """Read a model written by :func:`save`; returns the estimator.

    The file is checked before anything in it is used (see ``docs/model-format.md``):
    checksums, then sizes while decompressing, then the decoded model's structure, every
    tree's arrays included, so that a damaged or crafted file raises a ValueError rather
    than crashing or misleading prediction.

    Parameters
    ----------
    path : str or path-like, or a readable binary file object
    allow_pickle : bool, default=False
        Needed, and honoured only, for files saved with ``allow_pickle=True`` that hold
        pickled foreign objects. Unpickling can run arbitrary code: pass True only for
        files from a source you trust.
    max_uncompressed_size : int, optional
        Most bytes the file's members may decompress to, together. By default
        :data:`UNCOMPRESSED_RATIO` (100) times the file's size, and at least 64 MiB:
        saved models decompress to at most a few times their file size, so only a
        crafted file (a decompression bomb) reaches the default. Raise it to load a
        trusted file that needs more.

    Raises
    ------
    ValueError
        If the file is not a silva model file, is truncated, corrupted or modified (a
        checksum does not match), decompresses to more than ``max_uncompressed_size``,
        was written by a newer format version, names a class outside silva, holds pickles
        and ``allow_pickle`` is False, holds values that do not decode, or a model whose
        structure is invalid (a tree whose children, features or values are out of
        range); also when memory runs out while loading.
    """
    archive = _open_verified(path, max_uncompressed_size)
    document = archive.document
    pickled = document["pickled"]
    if pickled and not allow_pickle:
        listing = ", ".join(f"{item['where']} ({item['class']})" for item in pickled)
        raise ValueError(
            f"{archive.name!s} holds pickled objects of non-silva classes: {listing}. "
            "Unpickling can execute arbitrary code; if you trust this file, load it with "
            "allow_pickle=True.")
    if "root" not in document:
        raise ValueError(f"{archive.name!s} has no model in {MODEL_JSON}.")
    decoder = _Decoder(archive.member, bool(allow_pickle))
    try:
        model = decoder.decode(document["root"], "model")
        check_model(model, decoder.context)
        unused = set(archive.data) - decoder.used_members - {MODEL_JSON}
        if unused:
            raise ModelFileError(f"members {sorted(unused)} are not part of the model.")
    except ModelFileError as error:
        raise ValueError(f"{archive.name!s} is malformed or was modified: {error}") from None
    except MemoryError:
        raise ValueError(f"not enough memory to load {archive.name!s}.") from None
    except RecursionError:
        raise ValueError(f"{archive.name!s} is malformed: objects nested too "
                         "deeply.") from None
    return model


def read_metadata(path, *, max_uncompressed_size=None):
    """The verified ``model.json`` of a model file without its state: format, versions,
    estimator class, parameters (readable renderings), pickled objects and the ``user``
    metadata given to :func:`save`. Never instantiates anything."""
    document = dict(_open_verified(path, max_uncompressed_size).document)
    document.pop("root", None)
    return document


class PersistenceMixin:
    """Adds :meth:`save`, :meth:`dump_json` and the class method :meth:`load` to an
    estimator; the format is described in :mod:`silva.persistence`."""

    def save(self, path, *, allow_pickle=False, metadata=None):
        """Write this estimator to the model file ``path``; see :func:`silva.persistence.save`.
        """
        return save(self, path, allow_pickle=allow_pickle, metadata=metadata)

    def dump_json(self, path=None, *, indent=2):
        """The trees as readable JSON; see :func:`silva.export_json.dump_json`."""
        from silva.export_json import dump_json

        return dump_json(self, path, indent=indent)

    @classmethod
    def load(cls, path, *, allow_pickle=False, max_uncompressed_size=None):
        """Read a model file and check that it holds an instance of this class; see
        :func:`silva.persistence.load`."""
        model = load(path, allow_pickle=allow_pickle,
                     max_uncompressed_size=max_uncompressed_size)
        if not isinstance(model, cls):
            raise ValueError(f"{os.fspath(path) if isinstance(path, str | os.PathLike) else path}"
                             f" holds a {type(model).__name__}, not a {cls.__name__}.")
        return model
