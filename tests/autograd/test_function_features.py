"""PyTorch 2's custom ``autograd.Function`` features: the ``setup_context`` form,
several outputs on one node (``output_nr``, ``next_functions``, unused outputs,
non-tensor outputs, inputs returned as they are or written in place), forward-mode AD
through ``jvp`` and ``save_for_forward``, ``vmap`` over a Function, and the helpers of
``autograd.function`` (``once_differentiable``, ``InplaceFunction``, ``NestedIOFunction``,
keyword arguments, freed saved tensors, double backward).

Every Function is written once, in a factory taking the library, and run under ember and
PyTorch side by side: PyTorch's values, gradients, numbering and errors are the spec.
"""
import gc
import warnings
import weakref

import pytest
import torch

import ember


def L(t):
    """A tensor's values as nested lists (None stays None)."""
    return None if t is None else t.detach().tolist()


def fwad(lib):
    return ember.autograd.forward_ad if lib is ember else torch.autograd.forward_ad


def both(run):
    """``run(lib)`` under ember and under PyTorch: the same result."""
    assert run(ember) == run(torch)


# ---- setup_context -----------------------------------------------------------------------
def make_scale(lib, seen):
    class Scale(lib.autograd.Function):
        @staticmethod
        def forward(x, k, shift=1.0):
            return x * k + shift, x.detach().argmax()

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, k, shift = inputs
            seen.append((type(inputs).__name__, len(inputs), shift, ctx.needs_input_grad,
                         output[0].requires_grad, lib.is_grad_enabled()))
            ctx.save_for_backward(x)
            ctx.k = k
            ctx.mark_non_differentiable(output[1])

        @staticmethod
        def backward(ctx, g, g_index):
            (x,) = ctx.saved_tensors
            seen.append(("backward", L(g_index), str(g_index.dtype).split(".")[1]))
            return g * ctx.k + 0 * x, None, None
    return Scale


def test_setup_context_values_grads_and_ctx():
    """``forward`` without ctx, ``setup_context(ctx, inputs, output)`` after it (grad mode
    off, outputs not yet attached, defaults bound into ``inputs``); the non-differentiable
    output gets no grad and ``backward`` receives zeros for it."""
    def run(lib):
        seen = []
        Scale = make_scale(lib, seen)
        x = lib.tensor([1.0, 3.0, 2.0], requires_grad=True)
        y, i = Scale.apply(x, 2.0)
        y.sum().backward()
        return (L(y), L(i), i.requires_grad, y.output_nr, type(y.grad_fn).__name__,
                L(x.grad), seen)
    both(run)


def test_setup_context_keyword_arguments_and_defaults():
    """Keyword arguments are bound to ``forward``'s signature (defaults filled in), so
    ``inputs`` and ``needs_input_grad`` follow the signature's order."""
    def run(lib):
        seen = []

        class Mix(lib.autograd.Function):
            @staticmethod
            def forward(x, y=None, scale=2.0):
                return x * scale + y

            @staticmethod
            def setup_context(ctx, inputs, output):
                seen.append((len(inputs), inputs[2], ctx.needs_input_grad))

            @staticmethod
            def backward(ctx, g):
                return g * 2, g * 7, None

        x = lib.ones(2, requires_grad=True)
        y = lib.ones(2, requires_grad=True)
        r = Mix.apply(x, scale=3.0, y=y)
        r.sum().backward()
        return L(r), L(x.grad), L(y.grad), seen, len(r.grad_fn.next_functions)
    both(run)


def test_setup_context_forward_taking_ctx_is_a_type_error():
    """With ``setup_context`` overridden, ``forward`` is called without ctx."""
    def run(lib):
        class Wrong(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def setup_context(ctx, inputs, output):
                pass

            @staticmethod
            def backward(ctx, g):
                return g

        with pytest.raises(TypeError) as info:
            Wrong.apply(lib.ones(1))
        return "required" in str(info.value)
    both(run)


def test_setup_context_materialize_grads_and_mark_dirty():
    """``set_materialize_grads(False)`` and ``mark_dirty`` work from setup_context."""
    def run(lib):
        got = []

        class Two(lib.autograd.Function):
            @staticmethod
            def forward(x):
                return x * 2, x * 3

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.set_materialize_grads(False)

            @staticmethod
            def backward(ctx, a, b):
                got.append((L(a), b is None))
                return a * 2

        class AddOne(lib.autograd.Function):
            @staticmethod
            def forward(x):
                return x.add_(1)

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.mark_dirty(inputs[0])

            @staticmethod
            def backward(ctx, g):
                return g * 5

        x = lib.tensor([1.0, 2.0], requires_grad=True)
        a, _b = Two.apply(x)
        a.sum().backward()
        z = x.clone()
        y = AddOne.apply(z)
        (gz,) = lib.autograd.grad(y.sum(), x)
        return got, L(x.grad), y is z, z._version, type(z.grad_fn).__name__, L(gz), L(y)
    both(run)


# ---- several outputs ---------------------------------------------------------------------
def make_split(lib, got, materialize=True):
    class Split(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(materialize)
            return x * 2, 7, x * 3

        @staticmethod
        def backward(ctx, a, k, c):
            got.append((L(a), k, L(c)))
            two = 0 if a is None else a * 2
            three = 0 if c is None else c * 3
            return two + three
    return Split


@pytest.mark.parametrize("materialize", [True, False])
def test_outputs_share_one_node_and_count_from_zero(materialize):
    """Outputs of one call share ``grad_fn``; ``output_nr`` counts every output (the
    non-tensor one too); an unused output's gradient is zeros, or None without
    materializing; the non-tensor output always gets None."""
    def run(lib):
        got = []
        Split = make_split(lib, got, materialize)
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        a, k, c = Split.apply(x)
        c.sum().backward()
        return (a.grad_fn is c.grad_fn, a.output_nr, c.output_nr, k, x.is_leaf,
                x.output_nr, got, L(x.grad))
    both(run)


def test_next_functions_name_the_output_of_the_node():
    """An op on output 2 has the edge ``(FBackward, 2)``; gradients through both outputs
    reach the one backward call together."""
    def run(lib):
        got = []
        Split = make_split(lib, got)
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        a, _k, c = Split.apply(x)
        w = lib.tensor([10.0, 20.0])
        s = a * w + c
        (fa, na), (fc, nc) = (s.grad_fn.next_functions[0][0].next_functions[0],
                              s.grad_fn.next_functions[1])
        s.sum().backward()
        return (fa is a.grad_fn, na, fc is c.grad_fn, nc,
                [(n is x.grad_fn) for n, _ in a.grad_fn.next_functions], got, L(x.grad))
    both(run)


def test_hooks_retain_grad_and_grad_inputs_on_one_output():
    """Tensor hooks and ``retain_grad`` on the second output see that output's gradient;
    ``autograd.grad`` with an output as input returns its gradient."""
    def run(lib):
        got = []
        Split = make_split(lib, got)
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        a, _k, c = Split.apply(x)
        hooked = []
        c.register_hook(lambda g: hooked.append(L(g)) or g * 10)
        a.retain_grad()
        c.retain_grad()
        (a * 4 + c * 5).sum().backward(retain_graph=True)
        gc, = lib.autograd.grad((c * c).sum(), c)
        return hooked, L(a.grad), L(c.grad), L(x.grad), L(gc), got
    both(run)


def test_in_place_write_into_an_output_then_backward():
    """An output changed in place afterwards: its history goes through the in-place op
    and then into its slot of the node."""
    def run(lib):
        got = []
        Split = make_split(lib, got)
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        a, _k, c = Split.apply(x)
        c.mul_(a)
        c.sum().backward()
        return got, L(x.grad), type(c.grad_fn).__name__
    both(run)


def test_an_input_returned_as_is_comes_back_as_a_view():
    """Returning an input unchanged gives a new view of it with the Function's node;
    the input stays a leaf."""
    def run(lib):
        class Same(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                return x, y * 2

            @staticmethod
            def backward(ctx, gx, gy):
                return gx * 5, gy * 2

        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = lib.tensor([3.0], requires_grad=True)
        u, v = Same.apply(x, y)
        (u.sum() + v.sum()).backward()
        return (u is x, u._base is x, x.is_leaf, x.grad_fn is None, u.output_nr,
                v.output_nr, type(u.grad_fn).__name__, L(x.grad), L(y.grad))
    both(run)


def make_add_one(lib):
    class AddOne(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 3
    return AddOne


def test_mark_dirty_rebases_the_input_history():
    """``mark_dirty``: the input written in place is the output, with the Function's node
    (on a view, the base's history follows too); a leaf that requires grad raises."""
    def run(lib):
        AddOne = make_add_one(lib)
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        z = x * 1
        y = AddOne.apply(z)
        res = [y is z, z._version, type(z.grad_fn).__name__, L(z)]
        (g,) = lib.autograd.grad(y.sum(), x)
        res.append(L(g))
        base = x * 1
        v = base[1:]
        AddOne.apply(v)
        (g,) = lib.autograd.grad((base * base).sum(), x)
        res += [L(base), L(g)]
        with pytest.raises(RuntimeError) as info:
            AddOne.apply(lib.tensor([1.0], requires_grad=True))
        res.append(str(info.value))
        return res
    both(run)


def test_mark_dirty_of_an_input_not_returned_raises():
    def run(lib):
        class Bad(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.add_(1)
                ctx.mark_dirty(x)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g

        with pytest.raises(RuntimeError) as info:
            Bad.apply(lib.ones(2, requires_grad=True) * 1)
        return "dirty" in str(info.value)
    both(run)


# ---- forward-mode AD ---------------------------------------------------------------------
def make_exp(lib, seen):
    class Exp(lib.autograd.Function):
        generate_vmap_rule = True   # (PyTorch's jacfwd maps over the basis with vmap)

        @staticmethod
        def forward(x, k):
            return (x * k).exp()

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, k = inputs
            with pytest.raises(AssertionError):
                ctx.save_for_forward(output, k)     # (tensors only)
            ctx.save_for_forward(output)
            ctx.save_for_backward(output)
            ctx.k = k

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y * ctx.k, None

        @staticmethod
        def jvp(ctx, tx, tk):
            (y,) = ctx.saved_tensors
            seen.append((len(ctx.saved_tensors), tk))
            return tx * y * ctx.k
    return Exp


def test_jvp_gives_the_tangent_and_save_for_forward():
    """``unpack_dual`` of a custom Function's output is its ``jvp``'s result, with
    ``ctx.saved_tensors`` inside ``jvp`` giving what ``save_for_forward`` kept; ops
    around the Function compose with it."""
    def run(lib):
        seen = []
        Exp = make_exp(lib, seen)
        fw = fwad(lib)
        with fw.dual_level():
            d = fw.make_dual(lib.tensor([0.0, 0.5, 1.0]), lib.tensor([1.0, 2.0, -1.0]))
            out = Exp.apply(d * 3, 2.0)
            t1 = fw.unpack_dual(out).tangent
            t2 = fw.unpack_dual(out.sin() + d).tangent
        return ([round(v, 4) for v in L(t1)], [round(v, 4) for v in L(t2)], seen[:1])
    both(run)


def test_jvp_of_several_outputs_and_an_input_without_tangent():
    """``jvp`` gets a zero tangent for an input that carries none and returns one tangent
    per output."""
    def run(lib):
        seen = []

        class Pair(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                return x * y, x + y

            @staticmethod
            def backward(ctx, a, b):
                return a + b, a + b

            @staticmethod
            def jvp(ctx, tx, ty):
                seen.append((L(tx), L(ty)))
                return tx * 4 + ty, tx + ty

        fw = fwad(lib)
        with fw.dual_level():
            d = fw.make_dual(lib.tensor([1.0, 2.0]), lib.tensor([1.0, -1.0]))
            a, b = Pair.apply(d, lib.tensor([3.0, 4.0]))
            return L(fw.unpack_dual(a).tangent), L(fw.unpack_dual(b).tangent), seen[:1]
    both(run)


def test_forward_ad_without_jvp_raises():
    """PyTorch's error for a Function without ``jvp`` applied to a tensor that carries a
    tangent (directly or through other ops); other inputs that require grad are fine."""
    def run(lib):
        class NoJvp(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.exp()

            @staticmethod
            def backward(ctx, g):
                return g

        fw = fwad(lib)
        with fw.dual_level():
            d = fw.make_dual(lib.tensor([0.0]), lib.tensor([1.0]))
            with pytest.raises(NotImplementedError) as info:
                NoJvp.apply(d)
            with pytest.raises(NotImplementedError):
                NoJvp.apply((d * 2).sin())
            w = lib.tensor([2.0], requires_grad=True)
            out = NoJvp.apply(w * 3)
            tangent = fw.unpack_dual(out).tangent
        return str(info.value), L(out), tangent
    both(run)


# ---- vmap ----------------------------------------------------------------------------------
def make_cube(lib, rule):
    class Cube(lib.autograd.Function):
        generate_vmap_rule = rule == "generate"

        @staticmethod
        def forward(x, w):
            return x ** 3 * w

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(*inputs)

        @staticmethod
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            return 3 * x ** 2 * w * g, x ** 3 * g

    if rule == "staticmethod":
        def vmap(info, in_dims, x, w):
            xd, wd = in_dims
            x = x.movedim(xd, 0) if xd is not None else x
            w = w.movedim(wd, 0) if wd is not None else w
            return Cube.apply(x, w), 0
        Cube.vmap = staticmethod(vmap)
    return Cube


@pytest.mark.parametrize("rule", ["generate", "staticmethod"])
def test_vmap_over_a_function(rule):
    """``func.vmap`` over a Function with ``generate_vmap_rule`` or a ``vmap`` rule: the
    values and the gradients of PyTorch (ember maps the Function sample by sample)."""
    def run(lib):
        Cube = make_cube(lib, rule)
        x = lib.tensor([[1.0, 2.0], [3.0, -1.0], [0.5, 2.0]], requires_grad=True)
        w = lib.tensor([2.0, 3.0], requires_grad=True)
        y = lib.func.vmap(Cube.apply, in_dims=(0, None))(x, w)
        y.sum().backward()
        g = lib.func.vmap(lib.func.grad(lambda a, b: Cube.apply(a, b).sum()),
                          in_dims=(0, None))(x.detach(), w.detach())
        return L(y), L(x.grad), L(w.grad), L(g)
    both(run)


# ---- autograd.function helpers ---------------------------------------------------------------
def test_helpers_exist_as_in_pytorch():
    """``once_differentiable``, ``InplaceFunction(inplace=...)``, ``NestedIOFunction`` and
    ``FunctionCtx`` are in ``autograd.function``; instantiating a Function only warns."""
    def run(lib):
        fn = lib.autograd.function
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            f = fn.InplaceFunction(inplace=True)
        return (callable(fn.once_differentiable), f.inplace,
                [w.category.__name__ for w in caught],
                issubclass(fn.NestedIOFunction, lib.autograd.Function),
                issubclass(fn.InplaceFunction, lib.autograd.Function),
                fn.FunctionCtx is lib.autograd.function.FunctionCtx)
    both(run)


def test_nested_io_function_is_not_callable():
    """PyTorch's legacy NestedIOFunction cannot run a call (its own raises
    AttributeError); ember says so with NotImplementedError."""
    class Nested(ember.autograd.function.NestedIOFunction):
        def forward_extended(self, x):
            return x * 2

    with pytest.raises(NotImplementedError, match="NestedIOFunction"):
        Nested.apply(ember.ones(1, requires_grad=True))

    class TorchNested(torch.autograd.function.NestedIOFunction):
        def forward_extended(self, x):
            return x * 2

    with pytest.raises(AttributeError):
        TorchNested.apply(torch.ones(1, requires_grad=True))


def test_apply_with_keyword_arguments_without_setup_context():
    """A ctx-style Function takes keyword arguments; they count as inputs in
    ``forward``'s order, and ``backward`` returns one gradient per given argument."""
    def run(lib):
        seen = []

        class Mix(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, y=None, scale=2.0):
                seen.append(ctx.needs_input_grad)
                return x * scale + (0 if y is None else y)

            @staticmethod
            def backward(ctx, g):
                return g * 2, g * 7, None

        x = lib.ones(2, requires_grad=True)
        y = lib.ones(2, requires_grad=True)
        r = Mix.apply(x, scale=3.0, y=y)
        r.sum().backward()
        r2 = Mix.apply(x)
        with pytest.raises(RuntimeError) as info:
            r2.sum().backward()
        return L(r), L(x.grad), L(y.grad), seen, str(info.value)
    both(run)


def test_saved_tensors_after_backward_and_node_attributes():
    """The node reads as its ctx (``grad_fn.saved_tensors``, ``needs_input_grad``, set
    attributes); after a backward that freed them, reading saved tensors raises
    PyTorch's error."""
    def run(lib):
        class Sq(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, k):
                ctx.save_for_backward(x)
                ctx.k = k
                return x * x * k

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return 2 * x * g * ctx.k, None

        x = lib.tensor([3.0], requires_grad=True)
        y = Sq.apply(x, 2.0)
        res = [L(y.grad_fn.saved_tensors[0]), y.grad_fn.needs_input_grad, y.grad_fn.k]
        y.backward()
        for attempt in (lambda: y.grad_fn.saved_tensors, y.backward):
            with pytest.raises(RuntimeError) as info:
                attempt()
            res.append(str(info.value))
        return res
    both(run)


def test_double_backward_through_a_differentiable_backward():
    """A backward written in differentiable ops gives second derivatives."""
    def run(lib):
        class Cube(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x ** 3

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return 3 * x * x * g

        x = lib.tensor([2.0, -1.0], requires_grad=True)
        (g,) = lib.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x)
        return L(g), L(gg), g.requires_grad
    both(run)


def test_backward_errors_on_gradient_count_and_non_tensor_inputs():
    def run(lib):
        class Few(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                return x * y

            @staticmethod
            def backward(ctx, g):
                return g

        class NotNone(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, k):
                return x * k

            @staticmethod
            def backward(ctx, g):
                return g, g

        x = lib.ones(2, requires_grad=True)
        msgs = []
        for out in (Few.apply(x, x), NotNone.apply(x, 2.0)):
            with pytest.raises(RuntimeError) as info:
                out.sum().backward()
            msgs.append(str(info.value))
        return msgs
    both(run)


def test_vjp_is_another_name_for_backward():
    def run(lib):
        class ByVjp(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def vjp(ctx, g):
                return g * 4

        x = lib.ones(2, requires_grad=True)
        ByVjp.apply(x).sum().backward()
        return L(x.grad)
    both(run)


def test_func_jvp_and_jacfwd_use_the_function_jvp():
    """``func.jvp`` and ``func.jacfwd`` over a Function go through its ``jvp``."""
    def run(lib):
        seen = []
        Exp = make_exp(lib, seen)
        x = lib.tensor([0.0, 0.5])
        _, t = lib.func.jvp(lambda a: Exp.apply(a, 2.0), (x,), (lib.tensor([1.0, 3.0]),))
        j = lib.func.jacfwd(lambda a: Exp.apply(a, 2.0))(x)
        return ([round(v, 4) for v in L(t)], [[round(v, 4) for v in r] for r in L(j)],
                bool(seen))
    both(run)


@pytest.mark.parametrize("transform", ["vmap", "grad", "jvp", "vjp", "jacrev"])
def test_transforms_need_setup_context(transform):
    """Under any ``func`` transform a Function must use the setup_context form; under
    ``vmap`` it also needs a ``vmap`` rule or ``generate_vmap_rule=True`` (not both)."""
    def run(lib):
        class Old(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2

        class New(lib.autograd.Function):
            @staticmethod
            def forward(x):
                return x * 2

            @staticmethod
            def setup_context(ctx, inputs, output):
                pass

            @staticmethod
            def backward(ctx, g):
                return g * 2

            @staticmethod
            def jvp(ctx, t):
                return t * 2

        class Both(New):
            generate_vmap_rule = True

            @staticmethod
            def vmap(info, in_dims, x):
                return x * 2, in_dims[0]

        fn = lib.func
        x = lib.ones(2, 3)
        calls = {"vmap": lambda f: fn.vmap(f)(x),
                 "grad": lambda f: fn.grad(lambda t: f(t).sum())(x),
                 "jvp": lambda f: fn.jvp(f, (x,), (x,)),
                 "vjp": lambda f: fn.vjp(f, x),
                 "jacrev": lambda f: fn.jacrev(f)(x[0])}
        out = []
        for F in (Old, New, Both):
            try:
                calls[transform](F.apply)
                out.append("ok")
            except RuntimeError as e:
                out.append(str(e))
        return out
    both(run)


def test_backward_gradients_are_fitted_to_the_inputs():
    """A gradient the input broadcasts to is summed back, another dtype is cast to the
    input's; a shape the input does not broadcast to raises PyTorch's error."""
    def run(lib):
        class Wide(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return (g * 2).expand(3, 2).double()

        class Bad(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.sum()

            @staticmethod
            def backward(ctx, g):
                return g

        x = lib.tensor([1.0, 2.0], requires_grad=True)
        (g,) = lib.autograd.grad(Wide.apply(x).sum() * 1, x)
        with pytest.raises(RuntimeError) as info:
            Bad.apply(x).backward()
        return L(g), str(g.dtype).split(".")[1], str(info.value)
    both(run)


def test_node_hooks_and_freeing_without_the_garbage_collector():
    """A node hook of a two-output Function sees both output gradients; the node goes
    with its last output by reference counting (no cycle through ctx or the edges)."""
    def run(lib):
        Split = make_split(lib, [])
        x = lib.ones(2, requires_grad=True)
        a, _k, c = Split.apply(x)
        seen = []
        a.grad_fn.register_hook(lambda gi, go: seen.append((len(gi), len(go))))
        (a * c).sum().backward()
        a, _k, c = Split.apply(x)
        d = a * c
        node = weakref.ref(a.grad_fn)
        enabled = gc.isenabled()
        gc.disable()
        try:
            del a, c, d
            freed = node() is None
        finally:
            if enabled:
                gc.enable()
        return seen, freed
    both(run)


def test_saved_outputs_free_and_double_backward():
    """A Function saving its own output: gradients and second derivatives as PyTorch's,
    and the node still goes by reference counting; a saved dirty input is its output."""
    def run(lib):
        class Exp(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = x.exp()
                ctx.save_for_backward(y)
                return y

            @staticmethod
            def backward(ctx, g):
                (y,) = ctx.saved_tensors
                return g * y

        class Double(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.mul_(2)
                ctx.mark_dirty(x)
                ctx.save_for_backward(x)
                return x

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * 2 + 0 * x

        x = lib.tensor([0.0, 1.0], requires_grad=True)
        (g,) = lib.autograd.grad(Exp.apply(x).sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x)
        y = Exp.apply(x)
        node = weakref.ref(y.grad_fn)
        enabled = gc.isenabled()
        gc.disable()
        try:
            del y
            freed = node() is None
        finally:
            if enabled:
                gc.enable()
        z = Double.apply(x * 1)
        (gd,) = lib.autograd.grad(z.sum(), x)
        return ([round(v, 5) for v in L(g)], [round(v, 5) for v in L(gg)], freed, L(gd))
    both(run)
