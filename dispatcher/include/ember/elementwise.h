// The host half of a generated elementwise kernel's call, shared by every C++ backend.
//
// ember.dispatcher.codegen.cxx writes each elementwise kernel against a class
// `ElementwiseCall`. Everything in it that is not a loop — parsing the Python call, checking
// the operands' dtypes, dispatching on the dtype, reading the scalar and string attributes —
// is here; a backend supplies its loops as a struct and names the class:
//
//   struct MyLoops {
//     // out = f(ins...) elementwise; T the op's dtype, To the output's type (T or bool)
//     template <class T, class To, int... In, class Tensor, class F>
//     static void launch(const char* op, const Tensor& out, const Tensor* ins, F f);
//     // raise when pred holds for an element of `t` (or do nothing where it cannot tell)
//     template <unsigned Mask, class Tensor, class P>
//     static void check(const char* op, const Tensor& t, P pred, const char* message);
//   };
//   using ElementwiseCall = ember::ElementwiseCallT<MyLoops, MAXD>;
//
// Operand kinds (the template arguments Out and In...): E_T, the op's dtype; E_B, bool.
#pragma once

#include <array>
#include <cmath>
#include <string>

#include "python.h"
#include "scalar_ops.h"

#pragma GCC visibility push(hidden)

namespace ember {

enum : int { E_T = 0, E_B = 1 };

// the kind (E_T / E_B) of operand K among In...
template <int K, int... In>
constexpr int operand_kind_v = std::array<int, sizeof...(In)>{In...}[K];

// The type a backend's loop loads operand K as: the op's dtype T, or uint8_t for a bool
// operand (the functor's bool parameter turns it into != 0). On the host, gcc vectorises
// byte loads compared with zero about 3x better than loads of bool.
template <class T, int K, int... In>
using operand_t = std::conditional_t<operand_kind_v<K, In...> == E_B, uint8_t, T>;

template <int MaxDims>
class ElementwiseArgs {
 public:
  using Tensor = TensorT<MaxDims>;

  ElementwiseArgs(const char* op, PyObject* const* a, Py_ssize_t n, PyObject* kw,
                  std::initializer_list<const char*> names, int nrequired)
      : op_(op), args_(op, a, n, kw, names, nrequired) {}

  // out and the N inputs, checked: E_B operands bool, E_T operands one dtype. Returns that
  // dtype's code (the op's dtype, which the backend dispatches on).
  template <int Out, int... In>
  int operands(Tensor& out, Tensor* ins) const {
    constexpr int N = sizeof...(In);
    constexpr std::array<int, N> kinds{In...};
    out = args_.out(0);
    for (int i = 0; i < N; ++i) ins[i] = args_.tensor(i + 1);
    int code = Out == E_T ? out.dtype : -1;
    const Tensor* ref = Out == E_T ? &out : nullptr;
    for (int i = 0; i < N; ++i) {
      if (kinds[i] == E_B) {
        check_dtype(op_, ins[i], kBool, args_.names[i + 1]);
      } else if (ref == nullptr) {
        code = ins[i].dtype;
        ref = &ins[i];
      } else {
        check_same_dtype(op_, ins[i], *ref);
      }
    }
    if (Out == E_B) check_dtype(op_, out, kBool, "out");
    return code;
  }

  // Parse and check the operands, dispatch on the op's dtype T (in Mask) and call
  // body(Tag<T>, Tag<To>, out, ins), To being the output's type (T, or bool): where a
  // backend's run() starts its loops.
  template <unsigned Mask, int Out, int... In, class Body>
  void with_operands(Body body) const {
    Tensor out, ins[sizeof...(In)];
    const int code = operands<Out, In...>(out, ins);
    dispatch<Mask>(code, op_, [&](auto tag) {
      using T = EMBER_T(tag);
      body(tag, Tag<std::conditional_t<Out == E_B, bool, T>>{}, out, (const Tensor*)ins);
    });
  }

  // a number attribute (int or float), or `def` when absent; both fields of the result hold
  // the value (em::Scalar says why)
  em::Scalar scalar(int index, double def) const {
    em::Scalar s;
    PyObject* o = args_.v[index];
    if (!o || o == Py_None) return from_double(def);
    if (PyLong_Check(o)) {
      int overflow = 0;
      const long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
      if (!overflow) {
        s.is_int = true;
        s.i = v;
        s.d = (double)v;
        return s;
      }
    }
    s = from_double(args_.get_double(index));
    s.is_int = false;
    return s;
  }

  // a string attribute ("" for None)
  std::string str(int index) const { return args_.get_str(index); }

  [[noreturn]] void bad_mode(int index, const std::string& mode) const {
    raise(PyExc_ValueError, "%s(): unknown %s '%s'", op_, args_.names[index], mode.c_str());
  }

  const char* op() const { return op_; }

 protected:
  static em::Scalar from_double(double d) {
    em::Scalar s;
    s.d = d;
    // what an integer dtype takes: truncated (0 where no int64 holds it)
    s.i = std::fabs(d) < 9.2e18 ? (int64_t)d : 0;
    s.is_int = d == (double)s.i;
    return s;
  }

  const char* op_;
  ArgsT<MaxDims> args_;
};

// The class generated kernels call: ElementwiseArgs plus a backend's loops.
template <class Loops, int MaxDims>
class ElementwiseCallT : public ElementwiseArgs<MaxDims> {
 public:
  using Base = ElementwiseArgs<MaxDims>;
  using typename Base::Tensor;
  using Base::Base;

  // out = f(inputs...) elementwise
  template <unsigned Mask, int Out, int... In, class F>
  void run(F f) {
    this->template with_operands<Mask, Out, In...>(
        [&](auto tag, auto out_tag, const Tensor& out, const Tensor* ins) {
          Loops::template launch<EMBER_T(tag), EMBER_T(out_tag), In...>(this->op_, out, ins, f);
        });
  }

  // the op's check on argument `index` (integer division by zero, negative powers)
  template <unsigned Mask, class P>
  void check(int index, P pred, const char* message) {
    Tensor t = this->args_.tensor(index);
    if (t.dtype < 0 || t.dtype >= kNumDTypes || !(Mask & (1u << t.dtype))) return;
    Loops::template check<Mask>(this->op_, t, pred, message);
  }
};

}  // namespace ember

#pragma GCC visibility pop
