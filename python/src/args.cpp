// Arguments checked before any work, with errors that name them (common.h, docs/python.md
// "Errors"): never pybind11's "incompatible function arguments" with the internal signature.
#include "common.h"

#include <fmt/format.h>

#include <string>
#include <vector>

namespace nazar::py {
namespace {

const char* type_name(const pb::handle& v) {
    return Py_TYPE(v.ptr())->tp_name;
}

// Replaces the pending UnicodeEncodeError of encoding `s` by one that names the argument
// (its position and reason kept), and throws it.
[[noreturn]] void raise_unencodable(const std::string& name, const pb::handle& s) {
    pb::error_already_set e;
    if (!e.matches(PyExc_UnicodeEncodeError)) throw e;  // MemoryError and the like
    Py_ssize_t start = 0, end = 0;
    PyUnicodeEncodeError_GetStart(e.value().ptr(), &start);
    PyUnicodeEncodeError_GetEnd(e.value().ptr(), &end);
    const pb::object reason = e.value().attr("reason");
    const std::string why =
        fmt::format("{} cannot be encoded as UTF-8 ({}; a lone surrogate is not text)", name,
                    reason.cast<std::string>());
    PyObject* err = PyObject_CallFunction(PyExc_UnicodeEncodeError, "sOnns", "utf-8", s.ptr(),
                                          start, end, why.c_str());
    if (err == nullptr) throw pb::error_already_set();
    PyErr_SetObject(PyExc_UnicodeEncodeError, err);
    Py_DECREF(err);
    throw pb::error_already_set();
}

// `s` (a str) as UTF-8; max_bytes > 0: a ValueError when it is longer.
std::string utf8(const pb::handle& s, const std::string& name, std::size_t max_bytes) {
    const auto too_long = [&](std::size_t size, const char* unit) {
        return pb::value_error(fmt::format(
            "{} is {} {} long, over the limit of max_line_bytes={} bytes of UTF-8 (the command "
            "line's --max-line-bytes): pass a larger max_line_bytes to accept it",
            name, size, unit, max_bytes));
    };
    // At least one byte per character: a huge str is refused before it is encoded.
    const auto chars = static_cast<std::size_t>(PyUnicode_GetLength(s.ptr()));
    if (max_bytes > 0 && chars > max_bytes) throw too_long(chars, "characters");
    const auto bytes = pb::reinterpret_steal<pb::object>(PyUnicode_AsUTF8String(s.ptr()));
    if (!bytes) raise_unencodable(name, s);
    const auto n = static_cast<std::size_t>(PyBytes_GET_SIZE(bytes.ptr()));
    if (max_bytes > 0 && n > max_bytes) throw too_long(n, "bytes");
    return std::string(PyBytes_AS_STRING(bytes.ptr()), n);
}

}  // namespace

int64_t int_arg(const pb::handle& v, const char* name, int64_t lo, int64_t hi) {
    // ints and what acts as one (numpy's integers: __index__), not bools
    if (PyBool_Check(v.ptr()) || !PyIndex_Check(v.ptr()))
        throw pb::type_error(fmt::format("{} must be an int, got {}", name, type_name(v)));
    const auto i = pb::reinterpret_steal<pb::object>(PyNumber_Index(v.ptr()));
    if (!i) throw pb::error_already_set();
    int overflow = 0;
    const long long x = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
    if (x == -1 && PyErr_Occurred()) throw pb::error_already_set();
    if (overflow != 0 || x < lo || x > hi)
        throw pb::value_error(fmt::format("{} must be in [{}, {}], got {}", name, lo, hi,
                                          overflow > 0   ? "a number above 2**63"
                                          : overflow < 0 ? "a number below -2**63"
                                                         : std::to_string(x)));
    return x;
}

std::string text_arg(const pb::handle& v, const std::string& name) {
    if (!PyUnicode_Check(v.ptr()))
        throw pb::type_error(fmt::format("{} must be a str, got {}", name, type_name(v)));
    return utf8(v, name, 0);
}

std::vector<std::string> text_list(const pb::handle& seq, const char* name, std::size_t max_bytes) {
    if (PyUnicode_Check(seq.ptr()) || PyBytes_Check(seq.ptr()) || !PySequence_Check(seq.ptr()))
        throw pb::type_error(fmt::format("{} must be a list of str, got {}", name, type_name(seq)));
    const auto items = pb::reinterpret_borrow<pb::sequence>(seq);
    std::vector<std::string> out;
    out.reserve(items.size());
    for (std::size_t i = 0; i < items.size(); ++i) {
        const pb::object item = items[i];
        const std::string item_name = fmt::format("{}[{}]", name, i);
        if (!PyUnicode_Check(item.ptr()))
            throw pb::type_error(fmt::format("{} is {}, not str", item_name, type_name(item)));
        out.push_back(utf8(item, item_name, max_bytes));
    }
    return out;
}

}  // namespace nazar::py
