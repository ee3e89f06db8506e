"""Storages as PyTorch's Python API shows them (``untyped_storage()``, ``storage()``,
``UntypedStorage``, ``TypedStorage``, ``Tensor.set_``), compared with PyTorch call by
call, and safetensors' torch API (which reads storages) run under ``ember.as_torch``."""
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _both(fn):
    out = []
    for L in (torch, ember):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                out.append(fn(L))
            except Exception as e:  # noqa: BLE001 - the error type is compared
                out.append(type(e))
    return out


CASES = {
    "untyped_sizes": lambda L: (lambda s: (s.nbytes(), s.size(), len(s), s.element_size()))(
        L.arange(6.).view(2, 3).untyped_storage()),
    "same_object_for_views": lambda L: (lambda b: (
        b.untyped_storage() is b.t().untyped_storage(),
        b.untyped_storage() is b[1].untyped_storage(),
        b.untyped_storage() is L.ones(2).untyped_storage()))(L.arange(6.).view(2, 3)),
    "data_ptr": lambda L: (lambda b: (b.untyped_storage().data_ptr() == b.data_ptr(),
                                      b[1].untyped_storage().data_ptr() == b.data_ptr()))(
        L.arange(6.).view(2, 3)),
    "bytes": lambda L: L.tensor([1.0, -2.0]).untyped_storage().tolist(),
    "byte_item": lambda L: L.tensor([1.0, -2.0]).untyped_storage()[3],
    "typed": lambda L: (lambda s: (str(s.dtype).split(".")[1], s.size(), len(s), s.tolist(),
                                   s[1], s.nbytes(), s.element_size(),
                                   s.type().split(".")[1], type(s).__name__))(
        L.arange(6).view(2, 3)[1].storage()),
    "typed_untyped": lambda L: (lambda b: b.storage().untyped() is b.untyped_storage())(
        L.ones(3)),
    "new_untyped": lambda L: (L.UntypedStorage(5).nbytes(), L.UntypedStorage([1, 2, 255]).tolist(),
                              L.UntypedStorage().nbytes()),
    "new_typed": lambda L: (L.TypedStorage([1, 2], dtype=L.int16).tolist(),
                            L.FloatStorage([1.5, 2]).tolist(), L.LongStorage(3).size(),
                            str(L.DoubleStorage(2).dtype).split(".")[1]),
    "storage_write_shows_in_tensor": lambda L: (lambda x: (
        x.storage().__setitem__(1, 7.0), x.untyped_storage().fill_(0) and x.tolist()))(
        L.ones(2)),
    "copy_clone": lambda L: (lambda x: (
        x.untyped_storage().clone().tolist() == x.untyped_storage().tolist(),
        x.untyped_storage().clone().data_ptr() != x.data_ptr(),
        x.untyped_storage().cpu() is x.untyped_storage()))(L.arange(3.)),
    "is_storage": lambda L: (L.is_storage(L.ones(1).untyped_storage()),
                             L.is_storage(L.ones(1).storage()), L.is_storage(L.ones(1))),
    "set_tensor": lambda L: (lambda a: (lambda b: (b.set_(a), b.__setitem__(0, 9.0),
                                                   a.tolist(), b.is_set_to(a)))(
        L.empty(0)))(L.arange(4.))[2:],
    "set_storage_view": lambda L: (lambda x: L.ones(2).set_(x.untyped_storage(), 1, (2,))
                                   .tolist())(L.arange(3.)),
    "set_storage_strided": lambda L: (lambda x: (lambda t: (t.tolist(), t.stride()))(
        L.ones(2).set_(x.untyped_storage(), 0, (2, 2), (1, 1))))(L.arange(3.)),
    "set_typed": lambda L: (lambda x: L.zeros(1).set_(x.storage()).tolist())(L.arange(3.)),
    "set_empty": lambda L: (lambda t: (tuple(t.shape), t.numel()))(L.ones(2).set_()),
    "set_wrong_dtype": lambda L: L.ones(2).set_(L.zeros(2, dtype=L.int64)),
    "set_wrong_typed": lambda L: L.ones(2).set_(L.zeros(2, dtype=L.int64).storage()),
    "set_leaf": lambda L: L.ones(2, requires_grad=True).set_(L.zeros(2)),
    "set_no_grad_leaf": lambda L: (lambda y: (L.no_grad().__enter__(), y.set_(L.zeros(3)),
                                              L.set_grad_enabled(True))[1].shape)(
        L.ones(2, requires_grad=True)),
    "version_bumped": lambda L: (lambda b: (b.set_(L.ones(3)), b._version)[1])(L.empty(0)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_storage_as_pytorch(case):
    want, got = _both(CASES[case])
    if isinstance(want, type):
        assert isinstance(got, type) and issubclass(got, want), (want, got)
    else:
        assert got == want


def test_typed_storage_warns_once_as_pytorch():
    from ember import _storage as ST
    ST._TYPED_WARNED[0] = False
    with pytest.warns(UserWarning, match="TypedStorage is deprecated"):
        ember.ones(1).storage()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.ones(1).storage()


def test_set_past_the_storage_raises():
    with pytest.raises(RuntimeError, match="out of bounds for storage of size 12"):
        ember.ones(2).set_(ember.zeros(3).untyped_storage(), 2, (2,))


def test_safetensors_torch_api_runs_unchanged(tmp_path):
    """safetensors.torch finds shared tensors through untyped_storage().data_ptr() and
    .nbytes(): save_file/load_file/save_model/load_model as under PyTorch."""
    pytest.importorskip("safetensors")
    prog = tmp_path / "st.py"
    prog.write_text(textwrap.dedent(f"""
        import sys
        import numpy as np
        import torch
        from safetensors.torch import load, load_file, load_model, save, save_file, save_model
        a = torch.arange(6.).view(2, 3)
        d = {{"a": a, "b": torch.tensor([1, 2], dtype=torch.int64), "h": a[0].half()}}
        save_file(d, r"{tmp_path}/f_" + sys.argv[1] + ".safetensors", metadata={{"k": "v"}})
        back = load_file(r"{tmp_path}/f_" + sys.argv[1] + ".safetensors")
        m = torch.nn.Linear(3, 2)
        with torch.no_grad():
            m.weight.copy_(torch.tensor(np.arange(6.).reshape(2, 3)))
        save_model(m, r"{tmp_path}/m_" + sys.argv[1] + ".safetensors")
        m2 = torch.nn.Linear(3, 2)
        missing, unexpected = load_model(m2, r"{tmp_path}/m_" + sys.argv[1] + ".safetensors")
        try:
            save_file({{"x": a, "y": a[0]}}, r"{tmp_path}/shared.safetensors")
            shared = "saved"
        except RuntimeError as e:
            shared = "refused: " + str(e).strip().split(":")[0]
        one = load(save({{"x": a[1]}}))["x"]
        np.savez(sys.argv[2], a=back["a"].numpy(), b=back["b"].numpy(),
                 h=back["h"].float().numpy(), w=m2.weight.detach().numpy(),
                 one=one.numpy(), info=np.array([str(missing), str(unexpected), shared]))
    """))
    outs = {}
    for name, pre in (("torch", []), ("ember", ["-m", "ember.as_torch"])):
        npz = tmp_path / f"{name}.npz"
        r = subprocess.run([sys.executable, *pre, str(prog), name, str(npz)],
                           capture_output=True, text=True, timeout=300,
                           env=dict(os.environ, OMP_NUM_THREADS="1"))
        assert r.returncode == 0, r.stderr[-3000:]
        with np.load(npz) as z:
            outs[name] = {k: z[k] for k in z.files}
    for k, v in outs["torch"].items():
        np.testing.assert_array_equal(outs["ember"][k], v, err_msg=k)
    # and the files each wrote load in the other framework
    from safetensors.torch import load_file
    got = load_file(str(tmp_path / "f_ember.safetensors"))
    assert torch.equal(got["a"], torch.arange(6.).view(2, 3))


def test_view_keyword_forms_as_pytorch():
    for L in (torch, ember):
        x = L.arange(4.)
        assert tuple(x.view(dtype=L.int32).shape) == (4,)
        assert tuple(x.view(size=(2, 2)).shape) == (2, 2)
        with pytest.raises(TypeError):
            x.view((2, 2), dtype=L.int32)

