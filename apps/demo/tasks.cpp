#include "apps/demo/tasks.h"

#include "nazar/core/check.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>

namespace nazar::demo {

Task parse_task(std::string_view name) {
    if (name == "dates") return Task::dates;
    if (name == "reversal") return Task::reversal;
    throw UsageError(fmt::format("unknown task '{}' (expected dates or reversal)", name));
}

const char* to_string(Task task) {
    return task == Task::dates ? "dates" : "reversal";
}

bool is_leap_year(int y) {
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

int days_in_month(int y, int m) {
    NZ_CHECK(m >= 1 && m <= 12, "days_in_month: month {} is not in 1..12", m);
    static constexpr int kDays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && is_leap_year(y) ? 29 : kDays[m - 1];
}

int weekday(int y, int m, int d) {
    // Days since 1970-01-01 (H. Hinnant's days_from_civil); 1970-01-01 was a Thursday (3).
    y -= m <= 2;
    const int era = (y >= 0 ? y : y - 399) / 400;
    const int yoe = y - era * 400;
    const int doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    const long days = static_cast<long>(era) * 146097 + doe - 719468;
    return static_cast<int>(((days % 7) + 7 + 3) % 7);
}

std::string iso_date(int y, int m, int d) {
    return fmt::format("{:04d}-{:02d}-{:02d}", y, m, d);
}

int count_code_points(std::string_view s) {
    int n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
}

namespace {

using Names12 = std::array<const char*, 12>;
using Names7 = std::array<const char*, 7>;  // Monday first

const Names12 kEnMonths = {"January", "February", "March",     "April",   "May",      "June",
                           "July",    "August",   "September", "October", "November", "December"};
const Names7 kEnDays = {"Monday", "Tuesday",  "Wednesday", "Thursday",
                        "Friday", "Saturday", "Sunday"};
const Names12 kFrMonths = {"janvier", "février", "mars",      "avril",   "mai",      "juin",
                           "juillet", "août",    "septembre", "octobre", "novembre", "décembre"};
const Names7 kFrDays = {"lundi", "mardi", "mercredi", "jeudi", "vendredi", "samedi", "dimanche"};
const Names12 kDeMonths = {"Januar", "Februar", "März",      "April",   "Mai",      "Juni",
                           "Juli",   "August",  "September", "Oktober", "November", "Dezember"};
const Names7 kDeDays = {"Montag",  "Dienstag", "Mittwoch", "Donnerstag",
                        "Freitag", "Samstag",  "Sonntag"};
const Names12 kEsMonths = {"enero", "febrero", "marzo",      "abril",   "mayo",      "junio",
                           "julio", "agosto",  "septiembre", "octubre", "noviembre", "diciembre"};
const Names7 kEsDays = {"lunes", "martes", "miércoles", "jueves", "viernes", "sábado", "domingo"};
const Names12 kItMonths = {"gennaio", "febbraio", "marzo",     "aprile",  "maggio",   "giugno",
                           "luglio",  "agosto",   "settembre", "ottobre", "novembre", "dicembre"};
const Names7 kItDays = {"lunedì",  "martedì", "mercoledì", "giovedì",
                        "venerdì", "sabato",  "domenica"};
const Names12 kPtMonths = {"janeiro", "fevereiro", "março",    "abril",   "maio",     "junho",
                           "julho",   "agosto",    "setembro", "outubro", "novembro", "dezembro"};
const Names12 kNlMonths = {"januari", "februari", "maart",     "april",   "mei",      "juni",
                           "juli",    "augustus", "september", "oktober", "november", "december"};
const Names7 kNlDays = {"maandag", "dinsdag",  "woensdag", "donderdag",
                        "vrijdag", "zaterdag", "zondag"};

// Appends text and records the code-point spans of the fields.
struct Builder {
    Example ex;
    int cp = 0;
    void text(std::string_view t) {
        ex.source += t;
        cp += count_code_points(t);
    }
    void field(std::string_view t, Span& span) {
        span.begin = cp;
        text(t);
        span.end = cp;
    }
};

std::string upper(std::string s) {
    for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return s;
}
std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}
std::string abbrev(const char* month) {
    return std::string(month, 3);
}
const char* ordinal(int d) {
    if (d % 100 >= 11 && d % 100 <= 13) return "th";
    return d % 10 == 1 ? "st" : d % 10 == 2 ? "nd" : d % 10 == 3 ? "rd" : "th";
}

constexpr int kNumFormats = 28;
constexpr std::array<int, 3> kShortYearFormats = {6, 9, 15};

// The parts of one date as format_date() writes them.
struct DateParts {
    int d = 0, wd = 0, mi = 0;  // day, weekday (Monday = 0), month index (January = 0)
    std::string dd, mm, yy;     // zero-padded day, month, two-digit year
    std::string ds, ms, yyyy;   // day, month and year as plain numbers
};

// Writes text and the day/month/year fields into an Example (Builder).
struct DateOut {
    Builder& b;
    Example& e;
    void day(const std::string& s) { b.field(s, e.day); }
    void month(const std::string& s) { b.field(s, e.month); }
    void year(const std::string& s) { b.field(s, e.year); }
    void t(std::string_view s) { b.text(s); }
};

// The English formats with month names (0..8).
void write_english(int f, const DateParts& p, DateOut& o) {
    switch (f) {
        case 0:
            o.t(kEnDays[p.wd]), o.t(", "), o.day(p.ds), o.t(" "), o.month(kEnMonths[p.mi]),
                o.t(" "), o.year(p.yyyy);
            break;
        case 1:
            o.day(p.ds), o.t(" "), o.month(kEnMonths[p.mi]), o.t(" "), o.year(p.yyyy);
            break;
        case 2:
            o.month(kEnMonths[p.mi]), o.t(" "), o.day(p.ds), o.t(", "), o.year(p.yyyy);
            break;
        case 3:
            o.month(kEnMonths[p.mi]), o.t(" "), o.day(p.ds), o.t(ordinal(p.d)), o.t(", "),
                o.year(p.yyyy);
            break;
        case 4:
            o.t(kEnDays[p.wd]), o.t(", "), o.month(kEnMonths[p.mi]), o.t(" "), o.day(p.ds),
                o.t(", "), o.year(p.yyyy);
            break;
        case 5:
            o.day(p.ds), o.t(" "), o.month(abbrev(kEnMonths[p.mi])), o.t(" "), o.year(p.yyyy);
            break;
        case 6:
            o.day(p.dd), o.t(" "), o.month(abbrev(kEnMonths[p.mi])), o.t(" "), o.year(p.yy);
            break;
        case 7:
            o.day(p.ds), o.t(" "), o.month(upper(kEnMonths[p.mi])), o.t(" "), o.year(p.yyyy);
            break;
        case 8:
            o.day(p.ds), o.t(" "), o.month(lower(kEnMonths[p.mi])), o.t(" "), o.year(p.yyyy);
            break;
        default:
            NZ_FAIL("format_date: unhandled format {}", f);
    }
}

// The numeric formats (9..15): day, month and year in figures.
void write_numeric(int f, const DateParts& p, DateOut& o) {
    switch (f) {
        case 9:
            o.day(p.dd), o.t("/"), o.month(p.mm), o.t("/"), o.year(p.yy);
            break;
        case 10:
            o.day(p.ds), o.t("/"), o.month(p.ms), o.t("/"), o.year(p.yyyy);
            break;
        case 11:
            o.day(p.dd), o.t("."), o.month(p.mm), o.t("."), o.year(p.yyyy);
            break;
        case 12:
            o.year(p.yyyy), o.t("-"), o.month(p.mm), o.t("-"), o.day(p.dd);
            break;
        case 13:
            o.day(p.dd), o.t("-"), o.month(p.mm), o.t("-"), o.year(p.yyyy);
            break;
        case 14:
            o.year(p.yyyy), o.t("/"), o.month(p.mm), o.t("/"), o.day(p.dd);
            break;
        case 15:
            o.day(p.dd), o.t("."), o.month(p.mm), o.t("."), o.year(p.yy);
            break;
        default:
            NZ_FAIL("format_date: unhandled format {}", f);
    }
}

// French, German, Spanish, Italian, Portuguese and Dutch (16..27).
void write_european(int f, const DateParts& p, DateOut& o) {
    switch (f) {
        case 16:
            o.t(kFrDays[p.wd]), o.t(" "), o.day(p.ds), o.t(p.d == 1 ? "er " : " "),
                o.month(kFrMonths[p.mi]), o.t(" "), o.year(p.yyyy);
            break;
        case 17:
            o.day(p.ds), o.t(p.d == 1 ? "er " : " "), o.month(kFrMonths[p.mi]), o.t(" "),
                o.year(p.yyyy);
            break;
        case 18:
            o.t("le "), o.day(p.ds), o.t(" "), o.month(kFrMonths[p.mi]), o.t(" "), o.year(p.yyyy);
            break;
        case 19:
            o.t(kDeDays[p.wd]), o.t(", "), o.day(p.ds), o.t(". "), o.month(kDeMonths[p.mi]),
                o.t(" "), o.year(p.yyyy);
            break;
        case 20:
            o.day(p.ds), o.t(". "), o.month(kDeMonths[p.mi]), o.t(" "), o.year(p.yyyy);
            break;
        case 21:
            o.day(p.ds), o.t(" de "), o.month(kEsMonths[p.mi]), o.t(" de "), o.year(p.yyyy);
            break;
        case 22:
            o.t(kEsDays[p.wd]), o.t(", "), o.day(p.ds), o.t(" de "), o.month(kEsMonths[p.mi]),
                o.t(" de "), o.year(p.yyyy);
            break;
        case 23:
            o.day(p.ds), o.t(" "), o.month(kItMonths[p.mi]), o.t(" "), o.year(p.yyyy);
            break;
        case 24:
            o.t(kItDays[p.wd]), o.t(" "), o.day(p.ds), o.t(" "), o.month(kItMonths[p.mi]), o.t(" "),
                o.year(p.yyyy);
            break;
        case 25:
            o.day(p.ds), o.t(" de "), o.month(kPtMonths[p.mi]), o.t(" de "), o.year(p.yyyy);
            break;
        case 26:
            o.day(p.ds), o.t(" "), o.month(kNlMonths[p.mi]), o.t(" "), o.year(p.yyyy);
            break;
        case 27:
            o.t(kNlDays[p.wd]), o.t(" "), o.day(p.ds), o.t(" "), o.month(kNlMonths[p.mi]), o.t(" "),
                o.year(p.yyyy);
            break;
        default:
            NZ_FAIL("format_date: unhandled format {}", f);
    }
}

}  // namespace

int num_date_formats() {
    return kNumFormats;
}

bool format_has_short_year(int f) {
    return std::find(kShortYearFormats.begin(), kShortYearFormats.end(), f) !=
           kShortYearFormats.end();
}

Example format_date(int f, int y, int m, int d) {
    NZ_CHECK(f >= 0 && f < kNumFormats, "format_date: format {} is not in [0, {})", f, kNumFormats);
    NZ_CHECK(y >= 1900 && y <= 2099 && m >= 1 && m <= 12 && d >= 1 && d <= days_in_month(y, m),
             "format_date: {}-{}-{} is not a date in 1900..2099", y, m, d);
    NZ_CHECK(!format_has_short_year(f) || (y >= 1950 && y <= 2049),
             "format_date: format {} writes a two-digit year, which reads as 1950..2049 (got {})",
             f, y);
    Builder b;
    DateOut out{b, b.ex};
    const DateParts parts{.d = d,
                          .wd = weekday(y, m, d),
                          .mi = m - 1,
                          .dd = fmt::format("{:02d}", d),
                          .mm = fmt::format("{:02d}", m),
                          .yy = fmt::format("{:02d}", y % 100),
                          .ds = std::to_string(d),
                          .ms = std::to_string(m),
                          .yyyy = std::to_string(y)};
    if (f <= 8)
        write_english(f, parts, out);
    else if (f <= 15)
        write_numeric(f, parts, out);
    else
        write_european(f, parts, out);
    b.ex.target = iso_date(y, m, d);
    return std::move(b.ex);
}

Example random_date(Rng& rng) {
    const int f = static_cast<int>(rng.below(kNumFormats));
    const int y = format_has_short_year(f) ? 1950 + static_cast<int>(rng.below(100))
                                           : 1900 + static_cast<int>(rng.below(200));
    const int m = 1 + static_cast<int>(rng.below(12));
    const int d = 1 + static_cast<int>(rng.below(static_cast<uint64_t>(days_in_month(y, m))));
    return format_date(f, y, m, d);
}

Example random_reversal(Rng& rng, int max_length) {
    NZ_CHECK(max_length >= 1, "random_reversal: max_length {} < 1", max_length);
    const int n = 1 + static_cast<int>(rng.below(static_cast<uint64_t>(max_length)));
    Example e;
    e.source.resize(static_cast<std::size_t>(n));
    for (char& c : e.source) c = static_cast<char>('a' + rng.below(12));
    e.target.assign(e.source.rbegin(), e.source.rend());
    return e;
}

TaskData make_task(Task task, int n_train, int n_dev, int n_test, uint64_t seed, int max_length) {
    NZ_CHECK(n_train >= 0 && n_dev >= 0 && n_test >= 0, "make_task: negative sizes {} / {} / {}",
             n_train, n_dev, n_test);
    Rng rng(seed, 0x7a5c);
    std::unordered_set<std::string> seen;
    TaskData data;
    // Held-out sets first, so the training set (the largest) is the one that skips repeats.
    auto fill = [&](std::vector<Example>& out, int n) {
        out.reserve(static_cast<std::size_t>(n));
        int64_t tries = 0;
        while (static_cast<int>(out.size()) < n) {
            NZ_CHECK(++tries < 100LL * n + 1000, "make_task: cannot draw {} distinct {} examples",
                     n, to_string(task));
            Example e = task == Task::dates ? random_date(rng) : random_reversal(rng, max_length);
            if (seen.insert(e.source).second) out.push_back(std::move(e));
        }
    };
    fill(data.test, n_test);
    fill(data.dev, n_dev);
    fill(data.train, n_train);
    return data;
}

}  // namespace nazar::demo
