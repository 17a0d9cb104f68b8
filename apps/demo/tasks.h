// Built-in tasks of `nazar demo`, generated in code (no data files): a pair is a source string,
// a target string, and for dates the source character spans that spell the day, month and year,
// so a test can check where the attention looks ("highlighting", docs/spec.md §11).
//
//   dates     a human-written date in one of many formats and 7 languages -> its ISO form:
//               "Thursday, 3 May 1979" -> "1979-05-03", "03/05/79" (day/month/year, as written in
//               Europe) -> "1979-05-03", "3 mai 1979", "3. Mai 1979", "3 de mayo de 1979",
//               "May 3rd, 1979", "03.05.1979", "1979/05/03", upper/lower-case variants ...
//             Years 1900-2099; formats with a two-digit year use 1950-2049 (yy >= 50 -> 19yy), so
//             every source has exactly one reading. Weekdays are the real ones (proleptic
//             Gregorian calendar).
//   reversal  a string of lowercase letters a-l, length uniform in [1, max_length] -> the same
//             string reversed. Hard for a fixed-size bottleneck, natural for attention (the
//             output character t looks at source character S-1-t).
// Spans count Unicode code points (the char tokenizer's pieces), [begin, end).
// Generation is deterministic in the seed.
#pragma once

#include "nazar/core/rng.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace nazar::demo {

enum class Task { dates, reversal };
Task parse_task(std::string_view name);  // "dates" | "reversal"; UsageError otherwise
const char* to_string(Task task);

struct Span {
    int begin = 0, end = 0;  // code points [begin, end) of the source; empty when end == begin
    bool contains(int i) const { return i >= begin && i < end; }
    bool empty() const { return end <= begin; }
};

struct Example {
    std::string source, target;
    Span day, month, year;  // dates only
};

// Civil-calendar helpers (exposed for tests).
bool is_leap_year(int year);
int days_in_month(int year, int month);              // month 1..12
int weekday(int year, int month, int day);           // 0 = Monday .. 6 = Sunday
std::string iso_date(int year, int month, int day);  // "1979-05-03"
int count_code_points(std::string_view utf8);

// A random date in a random format (uniform over the formats). Every field of the result is set.
Example random_date(Rng& rng);
// The same date written in format `format` in [0, num_date_formats()); year/month/day must be
// valid and, for two-digit-year formats, 1950 <= year <= 2049 (else Error).
Example format_date(int format, int year, int month, int day);
int num_date_formats();
bool format_has_short_year(int format);

Example random_reversal(Rng& rng, int max_length);

struct TaskData {
    std::vector<Example> train, dev, test;  // pairwise disjoint sources (held-out dev and test)
};
// n_train / n_dev / n_test distinct examples (a source never repeats across or within the sets).
// max_length: reversal only (dates ignore it).
TaskData make_task(Task task, int n_train, int n_dev, int n_test, uint64_t seed,
                   int max_length = 100);

}  // namespace nazar::demo
