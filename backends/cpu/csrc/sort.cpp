// sort along one dim: stable for ties; NaN sorts above every number (last ascending,
// first descending).
#include <ember/ops.h>

#include "ember.h"

namespace ember {

namespace {

void k_sort(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const SortArgs<MAXD> args = parse_sort<MAXD>(a, n, kw);
  const Tensor& x = args.x;
  if (x.numel == 0) return;
  const bool desc = args.descending;
  const DimWalk w(args.values, args.indices, x, args.dim);
  const int64_t L = w.len, vsd = w.sd[0], isd = w.sd[1], xsd = w.sd[2];
  NoGil g(x.numel >= kGilThreshold);
  dispatch<M_ALL | M_BAREBONES>(x.dtype, "sort", [&](auto tag) {
    using T = EMBER_T(tag);
    using K = compute_t<T>;
    using P = std::pair<K, int64_t>;
    w.it.run(
        [&](char* const* p, const int64_t* s, int64_t m) {
          std::vector<P> buf((size_t)L);
          for (int64_t i = 0; i < m; ++i) {
            char* pv = p[0] + i * s[0];
            char* pi = p[1] + i * s[1];
            const char* px = p[2] + i * s[2];
            for (int64_t j = 0; j < L; ++j) buf[(size_t)j] = P(static_cast<K>(*(const T*)(px + j * xsd)), j);
            if (desc) {
              std::stable_sort(buf.begin(), buf.end(), [](const P& u, const P& v) {
                if constexpr (is_fp_v<T>) return u.first > v.first || (u.first != u.first && v.first == v.first);
                else return u.first > v.first;
              });
            } else {
              std::stable_sort(buf.begin(), buf.end(), [](const P& u, const P& v) {
                if constexpr (is_fp_v<T>) return u.first < v.first || (v.first != v.first && u.first == u.first);
                else return u.first < v.first;
              });
            }
            for (int64_t j = 0; j < L; ++j) {
              const int64_t src = buf[(size_t)j].second;
              *(T*)(pv + j * vsd) = cvt<T>(buf[(size_t)j].first);  // x may alias values
              *(int64_t*)(pi + j * isd) = src;
            }
          }
        },
        std::max<int64_t>(1, kGrain / (8 * L)));
  });
}
EMBER_KERNEL("sort", k_sort);

}  // namespace

}  // namespace ember
