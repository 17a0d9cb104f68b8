// The demo's generated tasks: the calendar, the exact strings of the issue's examples, spans that
// spell the fields, held-out disjointness, determinism and the error paths.
#include "apps/demo/tasks.h"
#include "nazar/core/check.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace test_demo_tasks {

using namespace nazar;
using namespace nazar::demo;

namespace {
// The code points [span.begin, span.end) of s.
std::string slice(const std::string& s, Span span) {
    std::string out;
    int cp = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
        const bool lead = (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80;
        if (lead && i > 0) ++cp;
        if (cp >= span.begin && cp < span.end) out += s[i];
    }
    return out;
}
}  // namespace

TEST(DemoTasks, Calendar) {
    EXPECT_EQ(weekday(1979, 5, 3), 3);   // Thursday (the issue's example)
    EXPECT_EQ(weekday(2000, 1, 1), 5);   // Saturday
    EXPECT_EQ(weekday(1970, 1, 1), 3);   // Thursday
    EXPECT_EQ(weekday(2024, 2, 29), 3);  // Thursday
    EXPECT_EQ(weekday(1900, 1, 1), 0);   // Monday
    EXPECT_TRUE(is_leap_year(2000));
    EXPECT_FALSE(is_leap_year(1900));
    EXPECT_TRUE(is_leap_year(2024));
    EXPECT_EQ(days_in_month(1900, 2), 28);
    EXPECT_EQ(days_in_month(2000, 2), 29);
    EXPECT_EQ(days_in_month(2023, 12), 31);
    EXPECT_EQ(iso_date(1979, 5, 3), "1979-05-03");
    EXPECT_THROW(days_in_month(2000, 13), Error);
}

TEST(DemoTasks, IssueExamples) {
    const Example a = format_date(0, 1979, 5, 3);
    EXPECT_EQ(a.source, "Thursday, 3 May 1979");
    EXPECT_EQ(a.target, "1979-05-03");
    EXPECT_EQ(slice(a.source, a.day), "3");
    EXPECT_EQ(slice(a.source, a.month), "May");
    EXPECT_EQ(slice(a.source, a.year), "1979");
    const Example b = format_date(9, 1979, 5, 3);
    EXPECT_EQ(b.source, "03/05/79");
    EXPECT_EQ(slice(b.source, b.month), "05");
    EXPECT_EQ(slice(b.source, b.year), "79");
    const Example c = format_date(17, 1979, 5, 3);
    EXPECT_EQ(c.source, "3 mai 1979");
    EXPECT_EQ(format_date(17, 1979, 5, 1).source, "1er mai 1979");
    EXPECT_EQ(format_date(3, 2001, 9, 11).source, "September 11th, 2001");
    EXPECT_EQ(format_date(3, 2001, 9, 22).source, "September 22nd, 2001");
    EXPECT_EQ(format_date(19, 2024, 2, 29).source, "Donnerstag, 29. Februar 2024");
    const Example e = format_date(22, 1999, 12, 31);
    EXPECT_EQ(e.source, "viernes, 31 de diciembre de 1999");
    // spans count code points, not bytes: "août" after "mercredi"
    const Example f = format_date(16, 1999, 8, 4);
    EXPECT_EQ(f.source, "mercredi 4 août 1999");
    EXPECT_EQ(slice(f.source, f.month), "août");
    EXPECT_EQ(f.year.begin, 16);
    EXPECT_EQ(slice(f.source, f.year), "1999");
}

TEST(DemoTasks, EveryFormatSpellsItsFields) {
    Rng rng(5);
    for (int f = 0; f < num_date_formats(); ++f)
        for (int k = 0; k < 40; ++k) {
            const int y = format_has_short_year(f) ? 1950 + static_cast<int>(rng.below(100))
                                                   : 1900 + static_cast<int>(rng.below(200));
            const int m = 1 + static_cast<int>(rng.below(12));
            const int d =
                1 + static_cast<int>(rng.below(static_cast<uint64_t>(days_in_month(y, m))));
            const Example e = format_date(f, y, m, d);
            SCOPED_TRACE(e.source);
            EXPECT_EQ(e.target, iso_date(y, m, d));
            const std::string day = slice(e.source, e.day), year = slice(e.source, e.year);
            EXPECT_EQ(std::stoi(day), d);
            EXPECT_EQ(std::stoi(year), format_has_short_year(f) ? y % 100 : y);
            EXPECT_FALSE(e.month.empty());
            EXPECT_LE(e.year.end, count_code_points(e.source));
            // the three spans never overlap
            EXPECT_TRUE(e.day.end <= e.month.begin || e.month.end <= e.day.begin);
            EXPECT_TRUE(e.month.end <= e.year.begin || e.year.end <= e.month.begin);
        }
}

TEST(DemoTasks, HeldOutSetsAreDisjointAndDeterministic) {
    const TaskData a = make_task(Task::dates, 3000, 200, 500, 42);
    const TaskData b = make_task(Task::dates, 3000, 200, 500, 42);
    ASSERT_EQ(a.train.size(), 3000u);
    ASSERT_EQ(a.dev.size(), 200u);
    ASSERT_EQ(a.test.size(), 500u);
    std::set<std::string> seen;
    for (const auto* set : {&a.train, &a.dev, &a.test})
        for (const Example& e : *set) EXPECT_TRUE(seen.insert(e.source).second) << e.source;
    for (std::size_t i = 0; i < a.train.size(); ++i)
        EXPECT_EQ(a.train[i].source, b.train[i].source);
    const TaskData c = make_task(Task::dates, 10, 0, 0, 43);
    EXPECT_NE(c.train[0].source + c.train[1].source, a.train[0].source + a.train[1].source);
}

TEST(DemoTasks, Reversal) {
    const TaskData r = make_task(Task::reversal, 500, 0, 100, 3, 100);
    int longest = 0;
    for (const Example& e : r.train) {
        EXPECT_EQ(std::string(e.source.rbegin(), e.source.rend()), e.target);
        EXPECT_GE(e.source.size(), 1u);
        EXPECT_LE(e.source.size(), 100u);
        for (char ch : e.source) EXPECT_TRUE(ch >= 'a' && ch <= 'l');
        longest = std::max(longest, static_cast<int>(e.source.size()));
    }
    EXPECT_GT(longest, 80);  // lengths spread up to the maximum
}

TEST(DemoTasks, Errors) {
    EXPECT_THROW(format_date(-1, 2000, 1, 1), Error);
    EXPECT_THROW(format_date(num_date_formats(), 2000, 1, 1), Error);
    EXPECT_THROW(format_date(1, 2001, 2, 29), Error);  // not a leap year
    EXPECT_THROW(format_date(1, 1899, 12, 31), Error);
    EXPECT_THROW(format_date(9, 1949, 1, 1), Error);  // two-digit year would read as 2049
    EXPECT_THROW(parse_task("copy"), UsageError);
    EXPECT_EQ(parse_task("reversal"), Task::reversal);
    EXPECT_THROW(make_task(Task::reversal, 100, 0, 0, 1, 1),
                 Error);  // only 12 distinct one-letter strings
    Rng rng(1);
    EXPECT_THROW(random_reversal(rng, 0), Error);
}

}  // namespace test_demo_tasks
