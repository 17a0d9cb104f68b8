// nazar._nazar: the pybind11 extension behind `import nazar` (docs/python.md).
//
// Errors: nazar::UsageError (a bad argument or configuration) becomes ValueError and any other
// nazar::Error (a bad or missing file, invalid data) becomes nazar.Error, a subclass of
// RuntimeError; both carry the library's one-line message, the one the CLI prints. A
// translation stopped by its CancelToken raises nazar.Cancelled, a subclass of nazar.Error.
#include "common.h"

#include "nazar/core/check.h"
#include "nazar/core/threads.h"

#include <pybind11/stl.h>

#include <vector>

namespace nazar::py {

pb::array_t<float> to_numpy(Tensor&& t) {
    std::vector<pb::ssize_t> shape(t.shape().dims().begin(), t.shape().dims().end());
    if (t.numel() == 0) return pb::array_t<float>(shape);
    auto* owner = new Tensor(std::move(t));
    pb::capsule free_when_done(owner, [](void* p) { delete static_cast<Tensor*>(p); });
    return pb::array_t<float>(shape, owner->data(), free_when_done);
}

pb::array_t<float> copy_to_numpy(ConstTensorView v) {
    std::vector<pb::ssize_t> shape(v.shape().dims().begin(), v.shape().dims().end());
    pb::array_t<float> a(shape);
    if (v.numel() > 0) std::copy(v.data(), v.data() + v.numel(), a.mutable_data());
    return a;
}

}  // namespace nazar::py

PYBIND11_MODULE(_nazar, m) {
    namespace pb = pybind11;
    m.doc() = "nazar's C++ library (attention-based RNN seq2seq); use the package `nazar`.";
    static pb::exception<nazar::Error> error(m, "Error", PyExc_RuntimeError);
    static pb::exception<nazar::py::Cancelled> cancelled(m, "Cancelled", error.ptr());
    cancelled.attr("__doc__") =
        "A translation stopped by its nazar.CancelToken (translate(..., cancel=token)); a "
        "nazar.Error. The message says how many of the sentences had finished.";
    pb::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const nazar::UsageError& e) {
            PyErr_SetString(PyExc_ValueError, e.what());
        } catch (const nazar::Error& e) {
            error(e.what());
        } catch (const nazar::py::Cancelled& e) {
            cancelled(e.what());
        }
    });
    m.def(
        "set_num_threads",
        [](const pb::handle& threads) {
            const auto n = nazar::py::int_arg(threads, "threads", 0, nazar::kMaxThreads);
            nazar::py::SigintBlocked blocked;  // new workers start with SIGINT blocked
            nazar::set_num_threads(static_cast<int>(n));
        },
        pb::arg("threads"), "Threads of BLAS and nazar's own loops, process-wide (0 = all cores).");
    m.def(
        "num_threads",
        [] {
            nazar::py::SigintBlocked blocked;  // the pool may start here
            return nazar::num_threads();
        },
        "The current thread count.");
    nazar::py::init_interrupt(m);
    nazar::py::init_translate(m);
    nazar::py::init_heatmaps(m);
    nazar::py::init_model(m);
    nazar::py::init_train(m);
    nazar::py::init_eval(m);
}
