// Reading a whole text file of lines, for the commands that need every line at once (eval's
// hypotheses and references, tune's dev set).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace nazar::cli {

// Lines of a file ("-" = stdin; gzip is decompressed): line endings and a UTF-8 BOM on line 1
// dropped, no line after a final '\n'. A line longer than max_line_bytes is an error naming the
// file and line (so /dev/zero or a 10 MB line fails at once, not after gigabytes); a device
// other than a terminal is refused (an endless /dev/urandom of short lines would never end).
// `what` names the file in errors ("reference file").
std::vector<std::string> read_lines(const std::string& path, std::string_view what,
                                    std::size_t max_line_bytes);

}  // namespace nazar::cli
