"""Model files (silva.persistence): round trips, refusals, corruption, JSON dumps."""

import io
import json
import os
import pickle
import zipfile

import joblib
import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.datasets import load_iris, make_regression
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression

from silva import persistence
from silva._input import CategoryEncoder
from silva.decision_tree import DecisionTreeClassifier, DecisionTreeRegressor
from silva.engine.tree import Tree
from silva.export_json import dump_json
from silva.persistence import PersistenceMixin, load, register_safe_class, save

TREE_ARRAYS = ["children_left", "children_right", "feature", "threshold",
               "missing_go_to_left", "is_categorical", "category_bitsets", "value",
               "impurity", "n_node_samples", "weighted_n_node_samples", "n_categories",
               "n_classes", "node_depth"]


def assert_same_tree(a, b):
    assert type(a) is type(b) is Tree
    assert a.n_features == b.n_features and a.n_outputs == b.n_outputs
    for name in TREE_ARRAYS:
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype, name
        np.testing.assert_array_equal(x, y, err_msg=name)


@pytest.fixture(scope="module")
def frame():
    rng = np.random.RandomState(0)
    n = 300
    df = pd.DataFrame({
        "color": pd.Categorical(rng.choice(["red", "green", "blue", "white"], n)),
        "size": rng.choice(["S", "M", "L"], n).astype(object),
        "flag": rng.rand(n) > 0.5,
        "value": rng.rand(n),
    })
    df.loc[rng.rand(n) < 0.1, "value"] = np.nan
    df.loc[rng.rand(n) < 0.1, "size"] = None
    label = ((df["color"].isin(["green", "white"]) & df["flag"]) | (df["value"] > 0.8))
    y = np.where(label, "yes", "no")
    return df, y


@pytest.fixture(scope="module")
def frame_model(frame):
    df, y = frame
    return DecisionTreeClassifier(categorical_features="auto", max_depth=5,
                                  random_state=0).fit(df, y)


# ----------------------------------------------------------------------- round trips


def test_classifier_on_a_frame_round_trips(tmp_path, frame, frame_model):
    df, _ = frame
    path = tmp_path / "model.silva"
    assert save(frame_model, path) == path
    loaded = load(path)
    assert type(loaded) is DecisionTreeClassifier
    assert loaded.get_params() == frame_model.get_params()
    assert_same_tree(loaded.tree_, frame_model.tree_)
    np.testing.assert_array_equal(loaded.classes_, frame_model.classes_)
    assert loaded.classes_.dtype == frame_model.classes_.dtype
    np.testing.assert_array_equal(loaded.feature_names_in_, frame_model.feature_names_in_)
    np.testing.assert_array_equal(loaded.is_categorical_, frame_model.is_categorical_)
    assert loaded._has_missing_at_fit is True and loaded.n_features_in_ == 4
    # the data-frame category encoder (private state) comes back and encodes the same way
    assert isinstance(loaded._encoder, CategoryEncoder)
    assert loaded._encoder.categories_.keys() == frame_model._encoder.categories_.keys()
    for j, categories in frame_model._encoder.categories_.items():
        np.testing.assert_array_equal(loaded._encoder.categories_[j], categories)
    np.testing.assert_array_equal(loaded.predict(df), frame_model.predict(df))
    np.testing.assert_array_equal(loaded.predict_proba(df), frame_model.predict_proba(df))
    # an unseen category and missing values predict as before
    probe = df.iloc[:10].assign(size=["XXL"] * 10)
    np.testing.assert_array_equal(loaded.predict_proba(probe), frame_model.predict_proba(probe))
    # and reordered columns are still refused by name
    with pytest.raises(ValueError, match="another order"):
        loaded.predict(df[["size", "color", "flag", "value"]])


@pytest.mark.parametrize("criterion", ["squared_error", "absolute_error", "poisson"])
def test_regressor_round_trips(tmp_path, criterion):
    X, y = make_regression(n_samples=200, n_features=5, random_state=0)
    y = np.abs(y)
    X[::9, 2] = np.nan
    model = DecisionTreeRegressor(criterion=criterion, max_depth=6, ccp_alpha=0.5,
                                  random_state=3).fit(X, y)
    path = tmp_path / "reg.silva"
    save(model, path)
    loaded = load(path)
    assert_same_tree(loaded.tree_, model.tree_)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    np.testing.assert_array_equal(loaded.feature_importances_, model.feature_importances_)
    assert loaded.get_depth() == model.get_depth()


def test_unfitted_estimator_round_trips(tmp_path):
    model = DecisionTreeClassifier(max_depth=3, class_weight={0: 1.0, 1: 2.5},
                                   categorical_features=[0, 2], max_features=0.5)
    path = tmp_path / "unfitted.silva"
    save(model, path)
    loaded = load(path)
    assert loaded.get_params() == model.get_params()
    assert isinstance(loaded.get_params()["class_weight"], dict)
    with pytest.raises(NotFittedError):
        loaded.predict(np.zeros((1, 3)))


def test_random_state_instance_round_trips(tmp_path):
    state = np.random.RandomState(42)
    state.rand(5)  # not at its seed position any more
    model = DecisionTreeClassifier(random_state=state)
    save(model, tmp_path / "rs.silva")
    loaded = load(tmp_path / "rs.silva").random_state
    assert isinstance(loaded, np.random.RandomState) and loaded is not state
    np.testing.assert_array_equal(loaded.rand(10), state.rand(10))


def test_category_encoder_round_trips(tmp_path, frame):
    df, _ = frame
    encoder = CategoryEncoder().fit(df, np.array([True, True, True, False]))
    save(encoder, tmp_path / "enc.silva")
    loaded = load(tmp_path / "enc.silva")
    assert list(loaded.categories_) == [0, 1, 2]  # integer keys survive JSON
    assert loaded.columns_ == encoder.columns_
    pd.testing.assert_frame_equal(loaded.transform(df), encoder.transform(df))


def test_files_are_deterministic(tmp_path, frame_model):
    save(frame_model, tmp_path / "a.silva")
    save(frame_model, tmp_path / "b.silva")
    assert (tmp_path / "a.silva").read_bytes() == (tmp_path / "b.silva").read_bytes()


def test_file_objects(frame, frame_model):
    buffer = io.BytesIO()
    save(frame_model, buffer)
    buffer.seek(0)
    loaded = load(buffer)
    np.testing.assert_array_equal(loaded.predict(frame[0]), frame_model.predict(frame[0]))


def test_metadata(tmp_path, frame_model):
    save(frame_model, tmp_path / "m.silva", metadata={"target": "y", "task": "classification"})
    meta = persistence.read_metadata(tmp_path / "m.silva")
    assert meta["format"] == "silva-model" and meta["format_version"] == 1
    assert meta["estimator"] == "silva.decision_tree.DecisionTreeClassifier"
    assert meta["params"]["max_depth"] == 5
    assert meta["user"] == {"target": "y", "task": "classification"}
    assert meta["pickled"] == [] and "root" not in meta
    with pytest.raises(ValueError, match="metadata is not JSON"):
        save(frame_model, tmp_path / "m2.silva", metadata={"bad": object()})


# ------------------------------------------------------- a fake ensemble and odd values


@register_safe_class
class FakeEnsemble(ClassifierMixin, PersistenceMixin, BaseEstimator):
    """Holds what ensembles hold: silva trees grown on feature subsets, a nested silva
    estimator, arrays, a shared reference, and a foreign scikit-learn final estimator."""

    def __init__(self, n_estimators=3, random_state=0):
        self.n_estimators = n_estimators
        self.random_state = random_state

    def fit(self, X, y):
        rng = np.random.RandomState(self.random_state)
        self.classes_ = np.unique(y)
        self.estimators_, self.estimators_features_ = [], []
        for i in range(self.n_estimators):
            features = np.sort(rng.choice(X.shape[1], 2, replace=False))
            self.estimators_.append(
                DecisionTreeClassifier(max_depth=3, random_state=i).fit(X[:, features], y))
            self.estimators_features_.append(features)
        self.nested_ = DecisionTreeRegressor(max_depth=2).fit(X, y.astype(float))
        self.weights_ = rng.rand(self.n_estimators)
        self.first_tree_ = {"tree": self.estimators_[0].tree_}  # a shared reference
        self.odd_ = {1: (np.float32(0.5), np.int16(-3), np.bool_(True), np.str_("x")),
                     "nan": float("nan"), "inf": -np.inf, "set": {3, 1, 2},
                     "dtype": np.dtype("float32"), "none": None,
                     "dates": np.array(["2024-01-01", "NaT"], dtype="datetime64[D]"),
                     "names": np.array(["a", None, 2.5], dtype=object)}
        self.final_ = LogisticRegression().fit(self._stack(X), y)
        return self

    def _stack(self, X):
        return np.hstack([tree.predict_proba(X[:, features]) * weight for tree, features,
                          weight in zip(self.estimators_, self.estimators_features_,
                                        self.weights_, strict=True)])

    def predict_proba(self, X):
        return self.final_.predict_proba(self._stack(X))

    def predict(self, X):
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]


class Unregistered(BaseEstimator):
    def __init__(self, depth=2):
        self.depth = depth


@pytest.fixture(scope="module")
def iris_ensemble():
    X, y = load_iris(return_X_y=True)
    return FakeEnsemble().fit(X, y), X


def test_foreign_sub_estimator_needs_allow_pickle_at_save(tmp_path, iris_ensemble):
    model, _ = iris_ensemble
    with pytest.raises(ValueError, match=r"model\.final_.*LogisticRegression.*allow_pickle"):
        model.save(tmp_path / "e.silva")
    assert not (tmp_path / "e.silva").exists()
    assert os.listdir(tmp_path) == []  # no temporary file left behind


def test_fake_ensemble_round_trips_with_allow_pickle(tmp_path, iris_ensemble):
    model, X = iris_ensemble
    path = tmp_path / "e.silva"
    model.save(path, allow_pickle=True)
    with pytest.raises(ValueError, match=r"pickled.*model\.final_.*allow_pickle=True"):
        load(path)
    loaded = FakeEnsemble.load(path, allow_pickle=True)
    np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))
    for ours, theirs in zip(loaded.estimators_, model.estimators_, strict=True):
        assert type(ours) is DecisionTreeClassifier
        assert_same_tree(ours.tree_, theirs.tree_)
    np.testing.assert_array_equal(loaded.nested_.predict(X), model.nested_.predict(X))
    np.testing.assert_array_equal(loaded.weights_, model.weights_)
    # the shared tree is one object again
    assert loaded.first_tree_["tree"] is loaded.estimators_[0].tree_
    odd = loaded.odd_
    scalars = odd[1]
    assert isinstance(scalars, tuple)
    for ours, theirs in zip(scalars, model.odd_[1], strict=True):
        assert type(ours) is type(theirs) and ours == theirs
    assert np.isnan(odd["nan"]) and odd["inf"] == -np.inf and odd["set"] == {1, 2, 3}
    assert odd["dtype"] == np.dtype("float32") and odd["none"] is None
    np.testing.assert_array_equal(odd["dates"], model.odd_["dates"])
    assert odd["names"].dtype == object and odd["names"].tolist() == ["a", None, 2.5]
    assert [type(v) for v in odd["names"]] == [str, type(None), float]


def test_files_without_pickles_load_without_allow_pickle(tmp_path, iris_ensemble):
    model, X = iris_ensemble
    # with allow_pickle=True but nothing foreign inside, no pickle is written
    tree = model.estimators_[1]
    save(tree, tmp_path / "t.silva", allow_pickle=True)
    assert persistence.read_metadata(tmp_path / "t.silva")["pickled"] == []
    np.testing.assert_array_equal(load(tmp_path / "t.silva").predict(X[:, [0, 1]]),
                                  tree.predict(X[:, [0, 1]]))


def test_unregistered_classes_need_pickle(tmp_path):
    with pytest.raises(ValueError, match="model, an object of the non-silva class"):
        save(Unregistered(), tmp_path / "u.silva")
    save(Unregistered(depth=7), tmp_path / "u.silva", allow_pickle=True)
    assert load(tmp_path / "u.silva", allow_pickle=True).depth == 7


def test_the_class_method_checks_the_class(tmp_path, frame_model):
    save(frame_model, tmp_path / "c.silva")
    with pytest.raises(ValueError, match="holds a DecisionTreeClassifier, not a FakeEnsemble"):
        FakeEnsemble.load(tmp_path / "c.silva")


# --------------------------------------------------------- pickle and joblib still work


def test_pickle_and_joblib_keep_working(tmp_path, frame, frame_model):
    df, _ = frame
    expected = frame_model.predict_proba(df)
    again = pickle.loads(pickle.dumps(frame_model))
    np.testing.assert_array_equal(again.predict_proba(df), expected)
    joblib.dump(frame_model, tmp_path / "m.joblib")
    np.testing.assert_array_equal(joblib.load(tmp_path / "m.joblib").predict_proba(df), expected)
    regressor = DecisionTreeRegressor(max_depth=3).fit(df[["value"]].fillna(0), np.arange(300.0))
    assert pickle.loads(pickle.dumps(regressor)).get_n_leaves() == regressor.get_n_leaves()


# ---------------------------------------------------------- refusals and corruption


def members_of(path):
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist()
                if name != persistence.MANIFEST}


def repack(path, members):
    """Rewrite ``path`` with ``members`` and checksums that match them (a crafted file)."""
    path.write_bytes(persistence._pack(members))


def edit_model_json(path, edit):
    members = members_of(path)
    document = json.loads(members["model.json"])
    edit(document)
    members["model.json"] = json.dumps(document).encode()
    repack(path, members)


@pytest.mark.parametrize("class_path", [
    "os.system", "collections.OrderedDict", "builtins.object",
    "silva.decision_tree.BaseEstimator",  # an imported name: not a silva class
    "silva.persistence.pickle", "silva.nonexistent.Model", "silva.decision_tree.nope",
])
def test_only_silva_classes_are_instantiated(tmp_path, frame_model, class_path):
    path = tmp_path / "evil.silva"
    save(frame_model, path)

    def edit(document):
        document["root"]["state"]["_encoder"]["class"] = class_path

    edit_model_json(path, edit)
    with pytest.raises(ValueError, match="silva class|cannot import"):
        load(path)


def test_pickles_are_never_loaded_without_allow_pickle(tmp_path, frame_model):
    """Even a crafted file whose metadata hides its pickle does not unpickle it."""
    marker = tmp_path / "executed"

    class Evil:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    path = tmp_path / "evil.silva"
    save(frame_model, path)
    members = members_of(path)
    document = json.loads(members["model.json"])
    document["root"]["state"]["criterion"] = {"$": "pickle", "class": "x", "id": 999,
                                              "member": "pickles/0.pkl"}
    members["model.json"] = json.dumps(document).encode()
    members["pickles/0.pkl"] = pickle.dumps(Evil())
    repack(path, members)
    with pytest.raises(ValueError, match="allow_pickle"):
        load(path)
    assert not marker.exists()


def test_pickled_arrays_are_refused(tmp_path, frame_model):
    path = tmp_path / "arr.silva"
    save(frame_model, path)
    members = members_of(path)
    buffer = io.BytesIO()
    np.save(buffer, np.array([object()], dtype=object), allow_pickle=True)
    members["arrays/0.npy"] = buffer.getvalue()
    repack(path, members)
    with pytest.raises(ValueError, match="not a plain numpy array"):
        load(path)


def test_newer_format_versions_are_refused(tmp_path, frame_model):
    path = tmp_path / "v.silva"
    save(frame_model, path)
    members = members_of(path)
    data = persistence._pack(members)
    # a version-2 manifest with correct checksums
    archive = zipfile.ZipFile(io.BytesIO(data))
    manifest = json.loads(archive.read("manifest.json"))
    manifest["format_version"] = 2
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as new:
        new.comment = b"silva-model sha256=" + b"0" * 64
        new.writestr("manifest.json", json.dumps(manifest))
        for name, member in members.items():
            new.writestr(name, member)
    raw = bytearray(out.getvalue())
    raw[-64:] = persistence._sha256(bytes(raw[:-64])).encode()
    path.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="format version 2.*Upgrade silva"):
        load(path)


def test_truncated_files_raise(tmp_path, frame_model):
    path = tmp_path / "t.silva"
    save(frame_model, path)
    data = path.read_bytes()
    for length in [0, 10, 100, len(data) // 3, len(data) // 2, len(data) - 200,
                   len(data) - 30, len(data) - 1]:
        path.write_bytes(data[:length])
        with pytest.raises(ValueError, match="not a silva model file|truncated"):
            load(path)


def test_every_flipped_byte_is_caught(tmp_path):
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    model = DecisionTreeClassifier().fit(X, [0, 0, 1, 1])
    path = tmp_path / "small.silva"
    save(model, path)
    data = path.read_bytes()
    for position in range(len(data)):
        corrupted = bytearray(data)
        corrupted[position] ^= 0x20
        with pytest.raises(ValueError, match="corrupted|not a silva model file|truncated"):
            load(io.BytesIO(bytes(corrupted)))


def test_a_tampered_member_is_named(tmp_path, frame_model):
    """Changing an array but fixing the file checksum is still caught per member."""
    path = tmp_path / "m.silva"
    save(frame_model, path)
    with zipfile.ZipFile(path) as archive:
        manifest = archive.read("manifest.json")
        members = {name: archive.read(name) for name in archive.namelist()}
    leaf_values = np.load(io.BytesIO(members["arrays/0.npy"]))
    buffer = io.BytesIO()
    np.save(buffer, leaf_values[::-1].copy())
    members["arrays/0.npy"] = buffer.getvalue()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as new:
        new.comment = b"silva-model sha256=" + b"0" * 64
        new.writestr("manifest.json", manifest)  # the old checksums
        for name, member in members.items():
            if name != "manifest.json":
                new.writestr(name, member)
    raw = bytearray(out.getvalue())
    raw[-64:] = persistence._sha256(bytes(raw[:-64])).encode()
    path.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="checksum of member 'arrays/0.npy'"):
        load(path)


def test_wrong_files(tmp_path):
    text = tmp_path / "model.txt"
    text.write_text("hello")
    with pytest.raises(ValueError, match="not a silva model file"):
        load(text)
    npz = tmp_path / "arrays.npz"
    np.savez(npz, a=np.arange(3))
    with pytest.raises(ValueError, match="not a silva model file"):
        load(npz)
    with pytest.raises(ValueError, match="cannot read the model file"):
        load(tmp_path / "absent.silva")
    pickled = tmp_path / "model.pkl"
    pickled.write_bytes(pickle.dumps(DecisionTreeClassifier()))
    with pytest.raises(ValueError, match="not a silva model file"):
        load(pickled)


# ----------------------------------------------------------------------------- atomic


def test_save_is_atomic(tmp_path, frame_model, monkeypatch):
    path = tmp_path / "m.silva"
    save(frame_model, path)
    before = path.read_bytes()
    calls = []
    real_replace = os.replace

    def recording_replace(source, target):
        calls.append((source, target))
        return real_replace(source, target)

    monkeypatch.setattr(os, "replace", recording_replace)
    save(DecisionTreeClassifier(max_depth=1), path)
    (source, target), = calls
    assert os.path.dirname(source) == str(tmp_path) and target == str(path)
    assert load(path).max_depth == 1

    # A failure while writing leaves the previous file intact and no temporary file.
    path.write_bytes(before)

    def failing_fsync(fd):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(OSError, match="disk full"):
        save(DecisionTreeClassifier(max_depth=2), path)
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["m.silva"]


# ------------------------------------------------------------------------- JSON dumps


def _predict_from_dump(dump, X, categories=None, tree_index=0):
    """A pure-Python reading of the dump: it must be enough to predict. With
    ``categories`` (feature -> fit categories), categorical values are raw labels."""
    tree = dump["trees"][tree_index]
    nodes = {node["id"]: node for node in tree["nodes"]}
    out = []
    for row in X:
        node = nodes[0]
        while not node.get("leaf"):
            x = row[node["feature"]]
            missing = x is None or (isinstance(x, float) and np.isnan(x))
            if "categories_left" in node and categories is not None:
                # a label unseen at fit is treated as missing
                if missing or x not in list(categories[node["feature"]]):
                    left = node["missing"] == "left"
                else:
                    left = x in node["category_labels_left"]
            elif "categories_left" in node:
                left = node["missing"] == "left" if missing else x in node["categories_left"]
            elif missing:
                left = node["missing"] == "left"
            else:
                left = x <= node["threshold"]
            node = nodes[node["left"] if left else node["right"]]
        out.append(node["value"])
    return np.array(out)


def test_dump_json_describes_the_tree(frame, frame_model):
    df, _ = frame
    dump = json.loads(dump_json(frame_model))
    assert dump["estimator"] == "silva.decision_tree.DecisionTreeClassifier"
    assert dump["feature_names"] == ["color", "size", "flag", "value"]
    assert dump["classes"] == ["no", "yes"] and dump["n_trees"] == 1
    tree = dump["trees"][0]
    arrays = frame_model.tree_
    assert tree["path"] == "model.tree_" and tree["n_nodes"] == arrays.node_count
    for node in tree["nodes"]:
        i = node["id"]
        assert node["n_samples"] == arrays.n_node_samples[i]
        np.testing.assert_allclose(node["value"], arrays.value[i, 0])
        if node.get("leaf"):
            assert arrays.children_left[i] == -1
            continue
        left, right = tree["nodes"][node["left"]], tree["nodes"][node["right"]]
        assert left["n_samples"] + right["n_samples"] == node["n_samples"]
        assert node["feature_name"] == dump["feature_names"][node["feature"]]
        assert node["missing"] == ("left" if arrays.missing_go_to_left[i] else "right")
        if arrays.is_categorical[i]:
            codes = node["categories_left"]
            categories = frame_model._encoder.categories_[node["feature"]]
            assert node["category_labels_left"] == [categories[c] for c in codes]
            assert "threshold" not in node
        else:
            assert node["threshold"] == arrays.threshold[i]
    assert any("category_labels_left" in n for n in tree["nodes"])
    # The dump is complete: reading it predicts what the model predicts, on the raw
    # frame values (category labels, NaN and None included).
    rows = [list(row) for row in df.astype(object).itertuples(index=False)]
    rows = [[None if (isinstance(v, float) and np.isnan(v)) else v for v in row]
            for row in rows]
    rows = [[np.nan if v is None and j == 3 else v for j, v in enumerate(row)] for row in rows]
    proba = _predict_from_dump(dump, rows, categories=frame_model._encoder.categories_)
    np.testing.assert_allclose(proba, frame_model.predict_proba(df))


def test_dump_json_of_an_ensemble_maps_feature_subsets(tmp_path, iris_ensemble):
    model, X = iris_ensemble
    text = model.dump_json(tmp_path / "dump.json")
    assert json.loads((tmp_path / "dump.json").read_text()) == json.loads(text)
    dump = json.loads(text)
    paths = [tree["path"] for tree in dump["trees"]]
    assert paths == ["model.estimators_[0].tree_", "model.estimators_[1].tree_",
                     "model.estimators_[2].tree_", "model.nested_.tree_"]
    for index, features in enumerate(model.estimators_features_):
        tree = model.estimators_[index].tree_
        split = tree.children_left != -1
        dumped = [n["feature"] for n in dump["trees"][index]["nodes"] if not n.get("leaf")]
        assert dumped == features[tree.feature[split]].tolist()
    # leaf values of a tree in the dump predict like the tree itself
    np.testing.assert_allclose(_predict_from_dump(dump, X, tree_index=3)[:, 0],
                               model.nested_.predict(X))


def test_names_that_moved_out_of_persistence_still_import_from_it():
    from silva import export_json, tree_walk

    assert persistence.dump_json is export_json.dump_json
    assert persistence.trees_to_dict is export_json.trees_to_dict
    assert persistence.iter_trees is tree_walk.iter_trees
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        persistence.nope  # noqa: B018 - the failing look-up is the test


def test_dump_json_of_array_fitted_tree_has_no_names():
    X, y = load_iris(return_X_y=True)
    model = DecisionTreeClassifier(max_depth=2).fit(X, y)
    dump = json.loads(persistence.dump_json(model))
    assert dump["feature_names"] is None and dump["classes"] == [0, 1, 2]
    assert all("feature_name" not in n for n in dump["trees"][0]["nodes"])
    np.testing.assert_allclose(_predict_from_dump(dump, X), model.predict_proba(X))


def test_mixin_on_the_decision_trees(tmp_path, frame, frame_model):
    df, _ = frame
    assert isinstance(frame_model, PersistenceMixin)
    frame_model.save(tmp_path / "m.silva")
    loaded = DecisionTreeClassifier.load(tmp_path / "m.silva")
    np.testing.assert_array_equal(loaded.predict(df), frame_model.predict(df))
    assert json.loads(frame_model.dump_json())["n_trees"] == 1
    regressor = DecisionTreeRegressor(max_depth=2).fit(df[["value"]].fillna(0.5),
                                                       np.arange(300.0))
    regressor.save(tmp_path / "r.silva")
    with pytest.raises(ValueError, match="not a DecisionTreeClassifier"):
        DecisionTreeClassifier.load(tmp_path / "r.silva")


# ------------------------------------------- every silva estimator, with no code of its own

ESTIMATORS = [
    ("silva.classic", "ID3Classifier", {}),
    ("silva.classic", "C45Classifier", {}),
    ("silva.forest", "RandomForestClassifier", {"n_estimators": 3}),
    ("silva.forest", "RandomForestRegressor", {"n_estimators": 3}),
    ("silva.forest", "ExtraTreesClassifier", {"n_estimators": 3}),
    ("silva.forest", "ExtraTreesRegressor", {"n_estimators": 3}),
    ("silva.bagging", "BaggingClassifier", {"n_estimators": 3}),
    ("silva.bagging", "BaggingRegressor", {"n_estimators": 3}),
    ("silva.boosting", "GradientBoostingClassifier", {"n_estimators": 3}),
    ("silva.boosting", "GradientBoostingRegressor", {"n_estimators": 3}),
    ("silva.adaboost", "AdaBoostClassifier", {"n_estimators": 3}),
    ("silva.adaboost", "AdaBoostRegressor", {"n_estimators": 3}),
    ("silva.voting", "VotingClassifier", {"estimators": "trees"}),
    ("silva.voting", "VotingRegressor", {"estimators": "trees"}),
    ("silva.stacking", "StackingClassifier", {"estimators": "trees"}),
    ("silva.stacking", "StackingRegressor", {"estimators": "trees"}),
]


@pytest.mark.parametrize(("module", "name", "params"), ESTIMATORS,
                         ids=[e[1] for e in ESTIMATORS])
def test_every_silva_estimator_round_trips(tmp_path, module, name, params):
    import importlib

    cls = getattr(importlib.import_module(module), name)
    classifier = name.endswith("Classifier")
    tree = DecisionTreeClassifier if classifier else DecisionTreeRegressor
    if params.get("estimators") == "trees":
        params = {"estimators": [("a", tree(max_depth=2, random_state=0)),
                                 ("b", tree(max_depth=4, random_state=1))]}
    model = cls(**params)
    if "random_state" in model.get_params(deep=False):
        model.set_params(random_state=0)
    rng = np.random.RandomState(0)
    X = rng.rand(120, 4)
    X[::11, 2] = np.nan
    y = (X[:, 0] + np.nan_to_num(X[:, 2]) > 0.8).astype(int) if classifier else \
        X[:, 0] * 3 + rng.rand(120)
    if "categorical_features" in model.get_params(deep=False):
        # estimators that take data frames with categories keep their encoder
        model.set_params(categorical_features="auto")
        X = pd.DataFrame(X, columns=["a", "b", "c", "d"]).assign(
            shop=pd.Categorical(rng.choice(["n", "s", "e"], 120)))
    model.fit(X, y)
    path = tmp_path / "model.silva"
    try:
        save(model, path)
        allow_pickle = False
    except ValueError as error:
        # only foreign parts (a scikit-learn final estimator) may need pickle
        assert "non-silva class sklearn." in str(error), error
        save(model, path, allow_pickle=True)
        allow_pickle = True
    loaded = load(path, allow_pickle=allow_pickle)
    assert type(loaded) is cls
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    if hasattr(model, "predict_proba"):
        np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))
    dump = json.loads(dump_json(model))
    assert dump["n_trees"] >= 1 and all(tree["nodes"] for tree in dump["trees"])
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(model)).predict(X),
                                  model.predict(X))


# ------------------------------------------------ sizes, malformed content, memory


def _bomb(path, n_bytes):
    """A model file whose one extra member is ``n_bytes`` zeros, written in chunks so
    that the test itself never holds them; checksums all correct."""
    import hashlib

    chunk = bytes(1 << 20)
    digest = hashlib.sha256()
    for _ in range(n_bytes // len(chunk)):
        digest.update(chunk)
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    model = DecisionTreeClassifier().fit(X, [0, 0, 1, 1])
    buffer = io.BytesIO()
    save(model, buffer)
    members = members_of(buffer)
    manifest = {"format": "silva-model", "format_version": 1, "members": {
        name: {"sha256": persistence._sha256(data), "size": len(data)}
        for name, data in members.items()}}
    manifest["members"]["arrays/zeros.npy"] = {"sha256": digest.hexdigest(),
                                               "size": n_bytes}
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.comment = b"silva-model sha256=" + b"0" * 64
        archive.writestr("manifest.json", json.dumps(manifest))
        for name, data in members.items():
            archive.writestr(name, data)
        with archive.open("arrays/zeros.npy", "w", force_zip64=True) as member:
            for _ in range(n_bytes // len(chunk)):
                member.write(chunk)
    raw = bytearray(out.getvalue())
    raw[-64:] = persistence._sha256(bytes(raw[:-64])).encode()
    path.write_bytes(bytes(raw))
    return path


def test_a_decompression_bomb_is_refused_before_it_is_decompressed(tmp_path):
    import tracemalloc

    path = _bomb(tmp_path / "bomb.silva", 100 << 20)
    assert path.stat().st_size < 1 << 20  # 100 MiB in a file of a few hundred KB
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"declares \d+ bytes of uncompressed members"
                                             r".*max_uncompressed_size"):
            load(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20


def test_a_member_no_model_uses_is_refused(tmp_path, frame_model):
    path = tmp_path / "m.silva"
    save(frame_model, path)
    repack(path, {**members_of(path), "arrays/extra.npy": b"\x93NUMPY"})
    with pytest.raises(ValueError, match=r"members \['arrays/extra.npy'\] are not part"):
        load(path)


def test_a_member_decoded_twice_is_refused(tmp_path, frame_model):
    """One member behind many arrays would multiply its size past the limit."""
    path = tmp_path / "m.silva"
    save(frame_model, path)

    def share(document):
        state = document["root"]["state"]["tree_"]["state"]
        state["impurity"] = dict(state["value"], id=10 ** 6)

    edit_model_json(path, share)
    with pytest.raises(ValueError, match=r"member 'arrays/\d+.npy' is used twice"):
        load(path)


def test_max_uncompressed_size(tmp_path, frame_model):
    path = tmp_path / "m.silva"
    save(frame_model, path)
    with zipfile.ZipFile(path) as archive:
        total = sum(info.file_size for info in archive.infolist())
    with pytest.raises(ValueError, match=r"1000 bytes.*\(max_uncompressed_size\)"):
        load(path, max_uncompressed_size=1000)
    with pytest.raises(ValueError, match="max_uncompressed_size"):
        DecisionTreeClassifier.load(path, max_uncompressed_size=total - 1)
    assert load(path, max_uncompressed_size=total).n_features_in_ == 4
    assert persistence.read_metadata(path, max_uncompressed_size=total)["format_version"] == 1
    for bad in (-1, 2.5, "10", True):
        with pytest.raises(ValueError, match="max_uncompressed_size must be"):
            load(path, max_uncompressed_size=bad)


def test_a_member_whose_size_disagrees_with_the_manifest_is_refused(tmp_path, frame_model):
    path = tmp_path / "m.silva"
    save(frame_model, path)
    members = members_of(path)
    manifest = json.loads(zipfile.ZipFile(path).read("manifest.json"))
    manifest["members"]["arrays/0.npy"]["size"] += 1
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.comment = b"silva-model sha256=" + b"0" * 64
        archive.writestr("manifest.json", json.dumps(manifest))
        for name, data in members.items():
            archive.writestr(name, data)
    raw = bytearray(out.getvalue())
    raw[-64:] = persistence._sha256(bytes(raw[:-64])).encode()
    path.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match=r"member 'arrays/0.npy' has \d+ bytes in the archive"):
        load(path)


def test_model_json_must_agree_with_the_manifest(tmp_path, frame_model):
    path = tmp_path / "m.silva"
    save(frame_model, path)
    edit_model_json(path, lambda d: d.update(format_version=0))
    with pytest.raises(ValueError, match="inconsistent.*version 0.*the manifest"):
        load(path)
    save(frame_model, path)
    edit_model_json(path, lambda d: d.update(estimator="silva.forest.RandomForestClassifier"))
    with pytest.raises(ValueError, match="names the estimator.*RandomForestClassifier.*holds"):
        load(path)
    with pytest.raises(ValueError, match="names the estimator"):
        persistence.read_metadata(path)


def test_malformed_content_raises_value_error_naming_the_place(tmp_path, frame_model):
    path = tmp_path / "m.silva"
    save(frame_model, path)

    def deep(document):
        document["root"]["state"]["max_depth"] = "__DEEP__"

    members = members_of(path)
    document = json.loads(members["model.json"])
    deep(document)
    text = json.dumps(document).replace('"__DEEP__"', "[" * 100_000 + "]" * 100_000)
    repack(path, {**members, "model.json": text.encode()})
    with pytest.raises(ValueError, match="nested too deeply"):
        load(path)
    # an integer too large for its dtype (OverflowError inside numpy)
    save(frame_model, path)
    edit_model_json(path, lambda d: d["root"]["state"].update(
        max_depth={"$": "scalar", "dtype": "<i8", "value": 10 ** 30}))
    with pytest.raises(ValueError, match=r"model\.max_depth: OverflowError"):
        load(path)
    # wrong types and missing keys
    save(frame_model, path)
    edit_model_json(path, lambda d: d["root"]["state"]["tree_"]["state"].update(
        children_left="x"))
    with pytest.raises(ValueError, match=r"model\.tree_\.children_left: expected a numpy"):
        load(path)
    save(frame_model, path)
    edit_model_json(path, lambda d: d["root"]["state"]["tree_"]["state"].pop("feature"))
    with pytest.raises(ValueError, match=r"model\.tree_: missing attributes \['feature'\]"):
        load(path)
    save(frame_model, path)
    edit_model_json(path, lambda d: d["root"]["state"].update(predict=3))
    with pytest.raises(ValueError, match="'predict' would hide DecisionTreeClassifier.predict"):
        load(path)


def test_running_out_of_memory_is_reported_as_such(tmp_path, frame_model, monkeypatch):
    path = tmp_path / "m.silva"
    save(frame_model, path)

    def no_memory(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(np, "load", no_memory)
    with pytest.raises(ValueError, match="not enough memory to load"):
        load(path)


def test_the_checks_name_the_member_and_the_node(tmp_path, frame_model):
    path = tmp_path / "m.silva"
    save(frame_model, path)
    document = json.loads(members_of(path)["model.json"])
    member = document["root"]["state"]["tree_"]["state"]["value"]["member"]
    members = members_of(path)
    value = np.load(io.BytesIO(members[member]))
    buffer = io.BytesIO()
    np.save(buffer, value.astype(np.float32))
    repack(path, {**members, member: buffer.getvalue()})
    with pytest.raises(ValueError, match=rf"model\.tree_\.value \({member}\): expected a "
                                         r"3-d array of float64, got a 3-d array of float32"):
        load(path)
    value[2, 0, 1] = np.nan
    buffer = io.BytesIO()
    np.save(buffer, value)
    repack(path, {**members, member: buffer.getvalue()})
    with pytest.raises(ValueError, match=r"model\.tree_: node 2: the node value is not finite"):
        load(path)


def test_derived_arrays_are_rebuilt_not_trusted(tmp_path, frame, frame_model):
    """A tree's cached depths (read by decision_path to size its output) and a multiway
    tree's parents are recomputed from the checked children."""
    from silva.classic import C45Classifier

    df, y = frame
    frame_model.get_depth()  # caches tree_._node_depth, which is then saved
    path = tmp_path / "m.silva"
    save(frame_model, path)
    members = members_of(path)
    document = json.loads(members["model.json"])
    member = document["root"]["state"]["tree_"]["state"]["_node_depth"]["member"]
    depth = np.load(io.BytesIO(members[member]))
    buffer = io.BytesIO()
    np.save(buffer, np.zeros_like(depth))
    repack(path, {**members, member: buffer.getvalue()})
    loaded = load(path)
    np.testing.assert_array_equal(loaded.tree_.node_depth, depth)
    assert (loaded.decision_path(df) != frame_model.decision_path(df)).nnz == 0

    c45 = C45Classifier().fit(df, y)
    save(c45, path)
    members = members_of(path)
    document = json.loads(members["model.json"])
    member = document["root"]["state"]["tree_"]["state"]["parent"]["member"]
    parent = np.load(io.BytesIO(members[member]))
    buffer = io.BytesIO()
    np.save(buffer, np.arange(parent.shape[0]))  # every node its own parent: a cycle
    repack(path, {**members, member: buffer.getvalue()})
    loaded = load(path)
    np.testing.assert_array_equal(loaded.tree_.parent, parent)
    np.testing.assert_array_equal(loaded.tree_.node_depth, c45.tree_.node_depth)
