// The dictionary of unknown-word replacement (alignment.h): source word -> its translation.
// A header of its own so that translator.h (the application API) needs neither alignment.h nor
// the model headers behind it.
#pragma once

#include <string>
#include <unordered_map>

namespace nazar {

using UnkDictionary = std::unordered_map<std::string, std::string>;
// `src<TAB>tgt` lines (a missing tab is an Error naming file:line; blank lines are skipped; the
// first entry of a source word wins). Defined in alignment.cpp.
UnkDictionary load_unk_dictionary(const std::string& path);

}  // namespace nazar
