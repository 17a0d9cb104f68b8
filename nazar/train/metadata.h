// Numbers stored as text in a checkpoint's metadata (optimizer and schedule state).
// Internal to nazar/train.
#pragma once

#include "nazar/core/check.h"
#include "nazar/core/safetensors.h"

#include <cstdlib>
#include <string>

namespace nazar {

// The metadata entry `key` of `st` read as a double; the whole text must be a number (strtod),
// else an input error naming the file, the key and the text.
inline double meta_double(const SafeTensors& st, const std::string& key) {
    const std::string& s = st.meta(key);
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    NZ_CHECK_INPUT(!s.empty() && end == s.c_str() + s.size(),
                   "{}: metadata '{}' = '{}' is not a number", st.source, key, s);
    return v;
}

}  // namespace nazar
