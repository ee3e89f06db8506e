"""Functions and methods pickle by name, as PyTorch's do."""
import ember


def test_every_public_function_and_method_pickles_by_name():
    """pickle finds functions by module and qualified name (a partial of one sent to a
    DataLoader worker): aliases (Tensor.arcsin_, fix_, greater_) included, as in PyTorch."""
    import pickle
    import types
    bad = []
    for space in (ember, ember.Tensor):
        for name in dir(space):
            fn = getattr(space, name, None) if not name.startswith("_") else None
            if isinstance(fn, types.FunctionType):
                try:
                    assert pickle.loads(pickle.dumps(fn)) is fn
                except Exception:  # noqa: BLE001
                    bad.append(name)
    assert not bad
