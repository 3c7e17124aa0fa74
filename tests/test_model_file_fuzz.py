"""Fuzzing model files: damaged or crafted files are refused with a ValueError, never
crash, hang or load into a model that predicts something else.

For every estimator family a small model is saved, and its file is mutated in three
ways: (a) random byte flips; (b) arrays edited and the checksums recomputed (the edits a
tester made by hand: children out of range, cycles, self-loops, feature indices beyond
the data, NaN thresholds and values, wrong shapes and dtypes); (c) edits of
``model.json`` (deep nesting, huge integers, wrong types, missing keys). Each case must
either raise ValueError from :func:`silva.persistence.load`, or load into a model whose
predictions, depth and JSON dump are exactly the original's. The loaded model is used in
this process: after the structural checks a crash is impossible, and a segfault would
fail the run loudly. Randomness is seeded, so the cases are the same on every run.
"""

import io
import json
import zipfile

import numba
import numpy as np
import pandas as pd
import pytest

import silva
from silva import persistence
from silva.persistence import dump_json, load, save

RNG_SEED = 20261125


# ----------------------------------------------------------------------- helpers


def read_members(data):
    """The members of a model file (without its manifest), name -> bytes."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name) for name in archive.namelist()
                if name != persistence.MANIFEST}


def rewrite(data, changes):
    """``data`` with members replaced (name -> bytes) and the manifest checksums and the
    closing checksum recomputed: what someone editing a file can do."""
    members = read_members(data)
    members.update(changes)
    return persistence._pack(members)


def npy(array):
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def array_members(document):
    """(attribute path, member) of every array stored in ``model.json``."""
    found = []

    def walk(value, where):
        if isinstance(value, list):
            for i, item in enumerate(value):
                walk(item, f"{where}[{i}]")
        elif isinstance(value, dict):
            tag = value.get("$")
            if tag == "ndarray":
                found.append((where, value["member"]))
            elif tag == "object":
                for key, item in value["state"].items():
                    walk(item, f"{where}.{key}")
            elif tag in ("dict", "bunch"):
                for key, item in value["items"]:
                    walk(item, f"{where}[{key!r}]")
            elif tag in ("tuple", "set", "object_array"):
                for i, item in enumerate(value["items"]):
                    walk(item, f"{where}[{i}]")

    walk(document["root"], "model")
    return found


def tree_objects(document):
    """Every encoded tree, packing and tree view of ``model.json`` (the dicts themselves,
    so that tests can edit them in place)."""
    found = []
    kinds = ("silva.engine.tree.Tree", "silva.engine.multiway.MultiwayTree",
             "silva.engine.ensemble.PackedTrees", "silva.engine.ensemble.PackedTreeView")

    def walk(value):
        if isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, dict):
            if value.get("$") == "object" and value["class"] in kinds:
                found.append(value)
            for item in value.values():
                walk(item)

    walk(document["root"])
    return found


# ----------------------------------------------------------------------- models


def _data():
    rng = np.random.RandomState(0)
    n = 120
    X = rng.rand(n, 4)
    X[::9, 2] = np.nan
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"]).assign(
        shop=pd.Categorical(rng.choice(["n", "s", "e", "w"], n)))
    y_class = ((X[:, 0] + np.nan_to_num(X[:, 2]) > 0.8).astype(int)
               + (X[:, 1] > 0.6).astype(int))
    y_value = X[:, 0] * 3 + rng.rand(n)
    return X, frame, y_class, y_value


def _families():
    T, R = silva.DecisionTreeClassifier, silva.DecisionTreeRegressor
    return {
        "cart_classifier": (T(max_depth=4, random_state=0, categorical_features="auto"),
                            "frame", "class"),
        "cart_regressor": (R(max_depth=4, random_state=0), "array", "value"),
        "random_forest": (silva.RandomForestClassifier(
            n_estimators=3, max_depth=4, random_state=0, categorical_features="auto"),
            "frame", "class"),
        "extra_trees": (silva.ExtraTreesRegressor(n_estimators=3, max_depth=4,
                                                  random_state=0), "array", "value"),
        "bagging": (silva.BaggingClassifier(T(max_depth=3), n_estimators=3,
                                            max_features=0.5, random_state=0),
                    "array", "class"),
        "adaboost": (silva.AdaBoostClassifier(n_estimators=3, random_state=0),
                     "array", "class"),
        "boosting_classifier": (silva.GradientBoostingClassifier(
            n_estimators=3, max_leaf_nodes=6, random_state=0, categorical_features="auto"),
            "frame", "class"),
        "boosting_regressor": (silva.GradientBoostingRegressor(
            n_estimators=3, max_leaf_nodes=6, random_state=0), "array", "value"),
        "id3": (silva.ID3Classifier(categorical_features="auto"), "frame", "class"),
        "c45": (silva.C45Classifier(), "array", "class"),
        "voting": (silva.VotingClassifier([("tree", T(max_depth=2)),
                                           ("c45", silva.C45Classifier())], voting="soft"),
                   "array", "class"),
        "stacking": (silva.StackingRegressor(
            [("tree", R(max_depth=2)),
             ("boost", silva.GradientBoostingRegressor(n_estimators=2, max_leaf_nodes=4))],
            final_estimator=R(max_depth=2)), "array", "value"),
    }


def _outputs(model, X):
    """What a loaded model must reproduce: predictions, probabilities, depth, dump."""
    out = {"predict": model.predict(X)}
    if hasattr(model, "predict_proba"):
        out["proba"] = model.predict_proba(X)
    if hasattr(model, "get_depth"):
        out["depth"] = model.get_depth()
    out["dump"] = dump_json(model, indent=None)
    return out


class Saved:
    """A family's fitted model: its file, its inputs and its outputs."""

    def __init__(self, name, model, X):
        self.name, self.X = name, X
        buffer = io.BytesIO()
        save(model, buffer)
        self.data = buffer.getvalue()
        self.expected = _outputs(model, X)
        self.document = json.loads(read_members(self.data)["model.json"])
        self.arrays = array_members(self.document)


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Thousands of predictions on 120 rows: waking the parallel kernels' threads costs
    ten times the work on a busy machine, and the cases do not depend on threads."""
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    yield
    numba.set_num_threads(threads)


@pytest.fixture(scope="module")
def saved():
    X, frame, y_class, y_value = _data()
    models = {}
    for name, (model, kind, target) in _families().items():
        inputs = frame if kind == "frame" else X
        model.fit(inputs, y_class if target == "class" else y_value)
        models[name] = Saved(name, model, inputs)
    return models


FAMILIES = list(_families())


def outcome(saved_model, data, strict=True):
    """"refused" (ValueError at load) or "same" (loads and reproduces every output).

    With ``strict=False``, for edits that can also make a valid model (a threshold moved,
    a split's missing-value direction flipped), "other" is allowed too: the file loads
    into a model that works (outputs of the right shape, a JSON dump, labels among its
    classes) but predicts differently. Anything else fails
    the test.
    """
    try:
        model = load(io.BytesIO(data))
    except ValueError:
        return "refused"
    got = _outputs(model, saved_model.X)
    try:
        for key, expected in saved_model.expected.items():
            if isinstance(expected, np.ndarray):
                assert got[key].dtype == expected.dtype, key
                np.testing.assert_array_equal(got[key], expected, err_msg=key)
            else:
                assert got[key] == expected, key
    except AssertionError:
        if strict:
            raise
        expected = saved_model.expected
        assert got["predict"].shape == expected["predict"].shape
        if hasattr(model, "classes_"):
            assert np.isin(got["predict"], model.classes_).all()
        if "proba" in got:
            assert got["proba"].shape == (expected["proba"].shape[0], len(model.classes_))
        if "depth" in got:
            assert isinstance(got["depth"], int) and got["depth"] >= 0
        json.loads(got["dump"])
        return "other"
    return "same"


def json_case(saved_model, edit):
    document = json.loads(json.dumps(saved_model.document))
    text = edit(document)
    if not isinstance(text, str):  # edited in place
        text = json.dumps(document)
    return rewrite(saved_model.data, {"model.json": text.encode()})


# ----------------------------------------------------------------- (a) byte flips


@pytest.mark.parametrize("family", FAMILIES)
def test_random_byte_flips_are_refused(saved, family):
    model = saved[family]
    rng = np.random.default_rng([RNG_SEED, FAMILIES.index(family)])
    data = model.data
    positions = rng.integers(0, len(data), size=150)
    for position in positions:
        corrupted = bytearray(data)
        corrupted[position] ^= 1 << int(rng.integers(0, 8))
        assert outcome(model, bytes(corrupted)) == "refused", position
    # A few bursts of random bytes in the middle as well.
    for _ in range(10):
        start = int(rng.integers(0, len(data) - 16))
        corrupted = bytearray(data)
        corrupted[start:start + 16] = rng.integers(0, 256, size=16, dtype=np.uint8).tobytes()
        assert outcome(model, bytes(corrupted)) == "refused", start


# ------------------------------------------------------ (b) arrays, checksums redone

UNUSED_OR_REBUILT = (".leaf_samples", ".node_start", ".node_end", ".parent",
                    ".parent_branch", ".node_depth")
CHILD_ARRAYS = {"children_left", "children_right", "branch_child", "missing_child",
                "walk_fields['left']"}


def _array_edits(name, array, rng):
    """Edits of one stored array that a crafted file could make: each yields the array
    that replaces it (the original is left alone)."""
    n = array.shape[0] if array.ndim else 1
    i = int(rng.integers(0, max(n, 1)))
    edits = []

    def put(index, value):
        copy = array.copy()
        copy.reshape(-1)[index] = value
        return copy

    if array.size and array.dtype.kind in "iu":
        bad_values = [n, n + 1_000_000, -2, -1_000_000_000, i, 0, max(i - 1, 0), 65535,
                      np.iinfo(array.dtype).max]
        if array.dtype.kind == "u":
            bad_values = [v for v in bad_values if v >= 0]
        for value in bad_values:
            value = np.array(value).astype(array.dtype)  # wraps like a hand edit would
            edits.append(put(i, value))
        if name in CHILD_ARRAYS and n > 2:
            swapped = array.copy()
            swapped[[0, n - 1]] = swapped[[n - 1, 0]]
            edits.append(swapped)
        if name == "walk_fields['feature_flags']":
            edits.append(put(i, (array[i] & ~np.uint32((1 << 30) - 1)) | np.uint32(65535)))
    if array.size and array.dtype.kind == "f":
        for value in (np.nan, np.inf, -np.inf, -3.5):
            edits.append(put(i, value))
    if array.size and array.dtype.kind == "b":
        edits.append(~array)
    # Shapes and dtypes.
    if array.ndim >= 1 and array.shape[0] > 1:
        edits.append(array[:-1].copy())
        edits.append(np.concatenate([array, array[-1:]]))
    if array.ndim >= 2 and array.shape[1] > 0:
        edits.append(array[:, :0].copy())
        edits.append(np.concatenate([array, array], axis=1))
        edits.append(array.reshape(array.shape[0], -1)[:, 0].copy())
    if array.ndim == 1:
        edits.append(array.reshape(1, -1).copy())
    for dtype in (np.float32, np.int32, np.int64, np.uint8, np.float64):
        if array.dtype != dtype and array.dtype.kind in "iufb":
            edits.append(array.astype(dtype))
    edits.append(np.asfortranarray(np.stack([array, array], axis=-1)) if array.ndim else
                 array.reshape(1))
    return edits


@pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning")
@pytest.mark.parametrize("family", FAMILIES)
def test_edited_arrays_with_recomputed_checksums(saved, family):
    model = saved[family]
    rng = np.random.default_rng([RNG_SEED, 1, FAMILIES.index(family)])
    members = read_members(model.data)
    counts = {"refused": 0, "same": 0, "other": 0}
    # Every array of every tree, packing and quantile forest, and a sample of the rest.
    tree_like = [(path, member) for path, member in model.arrays
                 if any(part in path for part in (
                     "tree", "packed", "_packed", "_leaf", "_node_", "_y_train"))]
    others = [pair for pair in model.arrays if pair not in tree_like]
    chosen = [tree_like[i] for i in rng.permutation(len(tree_like))[:14]] + [
        others[i] for i in rng.permutation(len(others))[:3]]
    assert tree_like, "no tree arrays found in the file"
    for path, member in chosen:
        array = np.load(io.BytesIO(members[member]))
        name = path.rsplit(".", 1)[-1]
        for edited in _array_edits(name, array, rng):
            result = outcome(model, rewrite(model.data, {member: npy(edited)}),
                             strict=False)
            counts[result] += 1
    # Edits of leaves' unused fields and of derived arrays change nothing ("same"); most
    # others break the structure, and none of those may load.
    assert counts["refused"] > counts["same"] + counts["other"], counts


@pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning")
@pytest.mark.parametrize("family", FAMILIES)
def test_tree_arrays_of_another_shape_or_dtype_are_refused(saved, family):
    """Except arrays that prediction does not read (a forest's per-tree leaf samples,
    kept for warm starts) or that loading rebuilds (a multiway tree's parents)."""
    model = saved[family]
    members = read_members(model.data)
    cases = 0
    for path, member in model.arrays:
        if not any(part in path for part in ("tree", "packed")) or path.endswith(
                UNUSED_OR_REBUILT):
            continue
        array = np.load(io.BytesIO(members[member]))
        if array.ndim == 0 or array.shape[0] < 2:
            continue
        edits = [array[:-1].copy(), np.concatenate([array, array[-1:]]),
                 array.reshape(1, -1) if array.ndim == 1 else array.reshape(-1)]
        edits += [array.astype(dtype) for dtype in (np.float32, np.int32, np.uint8)
                  if array.dtype != dtype]
        for edited in edits:
            assert outcome(model, rewrite(model.data, {member: npy(edited)})) == \
                "refused", (path, edited.shape, edited.dtype)
            cases += 1
    assert cases > 0


@pytest.mark.parametrize("family", FAMILIES)
def test_nan_thresholds_and_non_finite_values_are_refused(saved, family):
    model = saved[family]
    members = read_members(model.data)
    cases = 0
    numeric_split = {}  # owner path -> mask of the nodes with a numeric split
    for path, member in model.arrays:
        owner, name = path.rsplit(".", 1)
        array = np.load(io.BytesIO(members[member]))
        if name == "children_left":
            categorical = np.load(io.BytesIO(members[dict(model.arrays)[
                f"{owner}.is_categorical"]]))
            numeric_split[owner] = (array >= 0) & ~categorical
        elif name == "walk_fields['left']":
            flags = np.load(io.BytesIO(members[dict(model.arrays)[
                f"{owner}.walk_fields['feature_flags']"]]))
            numeric_split[owner] = (array >= 0) & ((flags >> np.uint32(30)) & 1 == 0)
        elif name == "kind":
            numeric_split[owner] = array == 2  # C4.5's threshold tests
    for path, member in model.arrays:
        owner, name = path.rsplit(".", 1)
        if name not in ("threshold", "walk_fields['threshold']", "value"):
            continue
        array = np.load(io.BytesIO(members[member]))
        nodes = (np.flatnonzero(numeric_split[owner])[:2] if name != "value"
                 else [0, array.shape[0] - 1])
        for node in nodes:
            for value in ([np.nan] if name != "value" else [np.nan, np.inf]):
                edited = array.copy()
                edited[node] = value
                assert outcome(model, rewrite(model.data, {member: npy(edited)})) == \
                    "refused", (path, node, value)
                cases += 1
    assert cases > 0


@pytest.mark.parametrize("family", FAMILIES)
def test_cycles_and_self_loops_are_refused(saved, family):
    """Children pointing back up the tree (a cycle that once hung prediction), at
    themselves, or twice at one node (a shared subtree)."""
    model = saved[family]
    members = read_members(model.data)
    cases = 0
    for path, member in model.arrays:
        name = path.rsplit(".", 1)[-1]
        if name not in CHILD_ARRAYS:
            continue
        array = np.load(io.BytesIO(members[member]))
        inner = np.flatnonzero(array >= 0)
        for node in inner[-3:]:
            for target in {0, int(node), int(inner[0])}:
                edited = array.copy()
                edited[node] = target
                if np.array_equal(edited, array):
                    continue
                assert outcome(model, rewrite(model.data, {member: npy(edited)})) == \
                    "refused", (path, node, target)
                cases += 1
    assert cases > 0


@pytest.mark.parametrize("family", FAMILIES)
def test_split_features_beyond_the_data_are_refused(saved, family):
    model = saved[family]
    members = read_members(model.data)
    cases = 0
    for path, member in model.arrays:
        name = path.rsplit(".", 1)[-1]
        if name not in ("feature", "walk_fields['feature_flags']"):
            continue
        array = np.load(io.BytesIO(members[member]))
        if name == "feature":
            inner = np.flatnonzero(array >= 0)
            values = [65535, 5, 4, -1]
        else:
            inner = np.flatnonzero(array != 0)
            values = [np.uint32(65535), np.uint32(5) | (array[inner[0]] & np.uint32(3 << 30))
                      if inner.size else np.uint32(5)]
        for node in inner[:4]:
            for value in values:
                edited = array.copy()
                edited[node] = value
                # Feature 4 is a real column of the 5-column frames: a valid edit there.
                result = outcome(model, rewrite(model.data, {member: npy(edited)}),
                                 strict=value != 4)
                assert result == "refused" or value == 4, (path, node, value)
                cases += 1
    assert cases > 0


# -------------------------------------------------------------- (c) model.json edits


def _deep(document, depth):
    document["user"] = "__DEEP__"
    return json.dumps(document).replace('"__DEEP__"', "[" * depth + "]" * depth)


def _json_edits(saved_model, rng):
    """(description, edit) pairs; ``edit(document)`` changes the parsed ``model.json``
    in place, or returns the new text."""
    edits = [
        ("nested 100,000 deep", lambda d: _deep(d, 100_000)),
        ("nested 5,000 deep", lambda d: _deep(d, 5_000)),
        ("a huge integer literal", lambda d: json.dumps(d).replace(
            '"format_version": 1', '"format_version": ' + "9" * 5000, 1)),
        ("format version differs", lambda d: d.update(format_version=0)),
        ("format differs", lambda d: d.update(format="other")),
        ("estimator differs", lambda d: d.update(estimator="silva.forest.BaseForest")),
        ("estimator is a number", lambda d: d.update(estimator=3)),
        ("document is a list", lambda d: "[1, 2]"),
        ("pickled is a string", lambda d: d.update(pickled="x")),
        ("root is a string", lambda d: d.update(root="x")),
        ("root without class", lambda d: d["root"].pop("class")),
        ("root state a list", lambda d: d["root"].update(state=[])),
        ("unknown tag", lambda d: d["root"].update({"$": "eval"})),
        ("root id a string", lambda d: d["root"].update(id="0")),
        ("a state key hiding a method", lambda d: d["root"]["state"].update(predict=1)),
        ("a dunder state key", lambda d: d["root"]["state"].update(__class__=1)),
    ]
    for obj in tree_objects(saved_model.document)[:4]:
        keys = sorted(obj["state"])
        cls = obj["class"].rsplit(".", 1)[-1]

        def locate(d, obj=obj):
            # The same object in the copy being edited: found by its id.
            return next(o for o in tree_objects(d) if o["id"] == obj["id"])

        for key in keys:
            edits.append((f"{cls} without {key}",
                          lambda d, key=key, locate=locate: locate(d)["state"].pop(key)))
        for key in rng.permutation(keys)[:4]:
            for label, value in [("a string", "x"), ("a huge int", 10 ** 30),
                                 ("a list", [1, 2]), ("null", None), ("a float", 2.5),
                                 ("a huge scalar", {"$": "scalar", "dtype": "<i8",
                                                    "value": 10 ** 30}),
                                 ("a dangling member", {"$": "ndarray", "id": 10 ** 6,
                                                        "member": "arrays/999.npy"}),
                                 ("a dangling ref", {"$": "ref", "id": 10 ** 6})]:
                edits.append((f"{cls}.{key} is {label}",
                              lambda d, key=key, value=value, locate=locate:
                              locate(d)["state"].update({key: value})))
    for key in ("n_features_in_", "n_classes_", "classes_", "n_iter_", "init_raw_"):
        if key in saved_model.document["root"]["state"]:
            for value in (10 ** 30, -1, "x", None, [1]):
                edits.append((f"{key} is {value!r}",
                              lambda d, key=key, value=value:
                              d["root"]["state"].update({key: value})))
    return edits


@pytest.mark.parametrize("family", FAMILIES)
def test_json_edits(saved, family):
    model = saved[family]
    rng = np.random.default_rng([RNG_SEED, 2, FAMILIES.index(family)])
    results = {}
    for description, edit in _json_edits(model, rng):
        try:
            results[description] = outcome(model, json_case(model, edit))
        except AssertionError as error:
            raise AssertionError(f"{family}: {description}: {error}") from None
    refused = [d for d, r in results.items() if r == "refused"]
    assert "nested 100,000 deep" in refused and "a huge integer literal" in refused
    assert "estimator differs" in refused and "format version differs" in refused
    assert len(refused) > 0.8 * len(results), sorted(set(results) - set(refused))


# ------------------------------------------------------------- the brief's defects


def test_an_out_of_range_child_is_named(saved):
    model = saved["cart_regressor"]
    members = read_members(model.data)
    path, member = next(p for p in model.arrays if p[0].endswith("tree_.children_left"))
    left = np.load(io.BytesIO(members[member]))
    left[0] = 10 ** 6
    with pytest.raises(ValueError, match=r"model\.tree_: node 0: children \(1000000, "):
        load(io.BytesIO(rewrite(model.data, {member: npy(left)})))


def test_a_cycle_is_refused_not_walked(saved):
    model = saved["random_forest"]
    members = read_members(model.data)
    path, member = next(p for p in model.arrays if p[0].endswith("walk_fields['left']"))
    left = np.load(io.BytesIO(members[member]))
    inner = np.flatnonzero(left >= 0)
    left[inner[-1]] = 0  # back to the root
    with pytest.raises(ValueError, match=r"packed.*tree \d+, node \d+"):
        load(io.BytesIO(rewrite(model.data, {member: npy(left)})))


def test_a_feature_index_of_65535_is_refused(saved):
    model = saved["cart_classifier"]
    members = read_members(model.data)
    path, member = next(p for p in model.arrays if p[0].endswith("tree_.feature"))
    feature = np.load(io.BytesIO(members[member]))
    feature[0] = 65535
    with pytest.raises(ValueError, match=r"node 0: split feature 65535 is outside \[0, 5\)"):
        load(io.BytesIO(rewrite(model.data, {member: npy(feature)})))


@pytest.mark.parametrize("edited", [np.ones(2), np.array([1.0, np.inf, 1.0])],
                         ids=["one weight short", "infinite weight"])
def test_adaboost_weights_not_one_finite_per_member_are_refused(saved, edited):
    """AdaBoost pairs each member with its weight and error: a file (checksums
    recomputed) whose weights are fewer than its three members, or not finite, is
    refused at load, naming the attribute; predicting from it had failed inside the
    vote."""
    model = saved["adaboost"]
    members = read_members(model.data)
    edited_names = []
    for path, member in model.arrays:
        name = path.rsplit(".", 1)[-1]
        if name not in ("estimator_weights_", "estimator_errors_"):
            continue
        assert np.load(io.BytesIO(members[member])).shape == (3,)
        with pytest.raises(ValueError, match=name):
            load(io.BytesIO(rewrite(model.data, {member: npy(edited)})))
        edited_names.append(name)
    assert sorted(edited_names) == ["estimator_errors_", "estimator_weights_"]
