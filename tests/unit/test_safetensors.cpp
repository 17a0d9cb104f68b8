// safetensors.h and fileio.h: the format by hand-built bytes, round trips, dtype conversion,
// a table of hostile headers, truncation at every length and flipped bytes (each must give a
// one-line nazar::Error, never a crash or another exception), and crash-safe writes
// (previous file intact, no temporary left, when the write fails).
#include "nazar/core/fileio.h"
#include "nazar/core/rng.h"
#include "nazar/core/safetensors.h"

#include <gtest/gtest.h>

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace nazar {
namespace test_safetensors {
namespace {

// A file image from a header string and raw data (length prefix written here).
std::string image(const std::string& header, const std::string& data = "") {
    const uint64_t n = header.size();
    std::string out(reinterpret_cast<const char*>(&n), 8);
    return out + header + data;
}

template <class T>
std::string raw(std::initializer_list<T> values) {
    std::string out;
    for (T v : values) out.append(reinterpret_cast<const char*>(&v), sizeof(T));
    return out;
}

// Parses and expects a nazar::Error whose message is one line and contains `needle`.
void expect_error(const std::string& bytes, const std::string& needle) {
    try {
        parse_safetensors(bytes, "bad.safetensors");
        ADD_FAILURE() << "no error; expected one mentioning '" << needle << "'";
    } catch (const Error& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find(needle), std::string::npos) << msg;
        EXPECT_NE(msg.find("bad.safetensors"), std::string::npos) << msg;
        EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
}

SafeTensors sample() {
    SafeTensors st;
    st.set("encoder.embedding.weight", Tensor::from({2, 3}, std::vector<float>{1, 2, 3, 4, 5, 6}));
    st.set("bias", Tensor::from({3}, std::vector<float>{-0.5f, 0.25f, 1e-30f}));
    st.set("scalar", Tensor::from(Shape{}, std::vector<float>{7}));
    st.set("empty", Tensor(Shape{0, 4}));
    st.set("w4", Tensor::from({1, 2, 1, 2}, std::vector<float>{9, 8, 7, 6}));
    st.metadata["nazar.format"] = "1";
    st.metadata["nazar.config"] = R"({"hidden_size": 4, "name": "ü"})";
    return st;
}

TEST(Safetensors, ParsesHandBuiltFile) {
    // A 2x3 F32 tensor and an I64 vector, offsets in file order different from name order.
    const std::string h =
        R"({"b":{"dtype":"I64","shape":[2],"data_offsets":[24,40]},)"
        R"("a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},"__metadata__":{"k":"v"}})";
    const auto st =
        parse_safetensors(image(h, raw<float>({1, 2, 3, 4, 5, 6}) + raw<int64_t>({-3, 16777216})));
    ASSERT_EQ(st.size(), 2u);
    EXPECT_EQ(st.get("a").shape(), (Shape{2, 3}));
    EXPECT_EQ(st.get("a").at(1, 2), 6.0f);
    EXPECT_EQ(st.get("b").shape(), (Shape{2}));
    EXPECT_EQ(st.get("b")[0], -3.0f);
    EXPECT_EQ(st.get("b")[1], 16777216.0f);
    EXPECT_EQ(st.meta("k"), "v");
    EXPECT_EQ(st.names(), (std::vector<std::string>{"a", "b"}));
}

TEST(Safetensors, SerializeLayoutIsTheFormat) {
    SafeTensors st;
    st.set("x", Tensor::from({2}, std::vector<float>{1.5f, -2}));
    const std::string bytes = serialize_safetensors(st);
    uint64_t n;
    std::memcpy(&n, bytes.data(), 8);
    EXPECT_EQ(n % 8, 0u);  // header padded with spaces to 8 bytes
    const std::string header = bytes.substr(8, n);
    EXPECT_EQ(header.substr(0, header.find_last_not_of(' ') + 1),
              R"({"x":{"data_offsets":[0,8],"dtype":"F32","shape":[2]}})");
    EXPECT_EQ(bytes.substr(8 + n), raw<float>({1.5f, -2}));
}

TEST(Safetensors, RoundTripIsExactAndDeterministic) {
    const SafeTensors st = sample();
    const std::string bytes = serialize_safetensors(st);
    EXPECT_EQ(serialize_safetensors(st), bytes);
    const SafeTensors back = parse_safetensors(bytes);
    EXPECT_EQ(back.names(), st.names());
    for (const auto& name : st.names()) {
        ASSERT_EQ(back.get(name).shape(), st.get(name).shape()) << name;
        for (int64_t i = 0; i < st.get(name).numel(); ++i)
            EXPECT_EQ(back.get(name)[i], st.get(name)[i]) << name;
    }
    EXPECT_EQ(back.metadata, st.metadata);
    EXPECT_EQ(serialize_safetensors(back), bytes);
}

// python/nazar_torch.py writes the same bytes as nazar for an all-F32 file (the fixture
// linear_nobias has no integer tensors), so files move both ways without the safetensors package.
TEST(Safetensors, PythonWrittenFileReserializesByteForByte) {
    const std::string path =
        std::string(NAZAR_SOURCE_DIR) + "/tests/parity/fixtures/linear_nobias.safetensors";
    const std::string bytes = read_file(path);
    const SafeTensors st = parse_safetensors(bytes, path);
    EXPECT_EQ(st.meta("case"), "linear_nobias");
    EXPECT_EQ(serialize_safetensors(st), bytes);
}

TEST(Safetensors, ConvertsF64AndIntegers) {
    const std::string h = R"({"d":{"dtype":"F64","shape":[2],"data_offsets":[0,16]},)"
                          R"("i":{"dtype":"I32","shape":[3],"data_offsets":[16,28]}})";
    const auto st =
        parse_safetensors(image(h, raw<double>({0.1, -1e30}) + raw<int32_t>({0, -7, 1 << 30})));
    EXPECT_EQ(st.get("d")[0], 0.1f);
    EXPECT_EQ(st.get("d")[1], -1e30f);
    EXPECT_EQ(st.get("i")[1], -7.0f);
    EXPECT_EQ(st.get("i")[2], static_cast<float>(1 << 30));  // a power of two is exact
}

TEST(Safetensors, RejectsInexactIntegersAndF64Overflow) {
    expect_error(image(R"({"i":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})",
                       raw<int64_t>({16777217})),
                 "16777217 at index 0 is not exactly representable");
    expect_error(image(R"({"i":{"dtype":"I32","shape":[2],"data_offsets":[0,8]}})",
                       raw<int32_t>({1, 123456789})),
                 "123456789 at index 1");
    expect_error(image(R"({"i":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})",
                       raw<int64_t>({INT64_MAX})),
                 "not exactly representable");
    expect_error(
        image(R"({"d":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})", raw<double>({1e300})),
        "outside float32 range");
}

struct BadCase {
    const char* what;
    std::string bytes;
    const char* needle;
};

TEST(Safetensors, HostileHeadersGiveOneLineErrors) {
    const std::string d8 = raw<float>({1, 2});
    const std::string ok = R"("dtype":"F32","shape":[2],"data_offsets":[0,8])";
    std::string huge_len(8, '\0');
    const uint64_t big = (100ull << 20) + 1;
    std::memcpy(huge_len.data(), &big, 8);
    std::string beyond(8, '\0');
    const uint64_t b2 = 1000;
    std::memcpy(beyond.data(), &b2, 8);
    const std::vector<BadCase> cases = {
        {"empty file", "", "shorter than the 8-byte"},
        {"7 bytes", std::string(7, '\0'), "shorter than the 8-byte"},
        {"absurd header length", huge_len + "{}", "exceeds the 104857600 byte limit"},
        {"header beyond file", beyond + "{}", "header length 1000 exceeds the file size 10"},
        {"zero header", image(""), "JSON object"},
        {"not an object", image("[1,2]"), "JSON object"},
        {"invalid JSON", image("{\"a\":"), "invalid JSON"},
        {"garbage JSON", image("{\x01\n\x02}"), "invalid JSON"},
        {"entry not object", image(R"({"a":3})"), "entry 'a' must be an object"},
        {"missing field", image(R"({"a":{"dtype":"F32","shape":[2]}})", d8),
         "needs dtype, shape and data_offsets"},
        {"unexpected key", image(R"({"a":{)" + ok + R"(,"x":1}})", d8), "unexpected key 'x'"},
        {"unknown dtype", image(R"({"a":{"dtype":"Q7","shape":[2],"data_offsets":[0,8]}})", d8),
         "unknown dtype 'Q7'"},
        {"unsupported dtype",
         image(R"({"a":{"dtype":"F16","shape":[4],"data_offsets":[0,8]}})", d8), "dtype F16"},
        {"dtype not string", image(R"({"a":{"dtype":1,"shape":[2],"data_offsets":[0,8]}})", d8),
         "dtype must be a string"},
        {"negative dim", image(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", d8),
         "non-negative"},
        {"float dim", image(R"({"a":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})", d8),
         "non-negative integers"},
        {"huge dim",
         image(R"({"a":{"dtype":"F32","shape":[99999999999],"data_offsets":[0,8]}})", d8),
         "too large"},
        {"overflowing shape",
         image(
             R"({"a":{"dtype":"F32","shape":[2147483647,2147483647,2147483647,2147483647],"data_offsets":[0,8]}})",
             d8),
         "shape overflows"},
        {"5 dims", image(R"({"a":{"dtype":"F32","shape":[1,1,1,1,2],"data_offsets":[0,8]}})", d8),
         "5 dimensions"},
        {"shape vs offsets", image(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", d8),
         "= 12 bytes"},
        {"offsets not pair", image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", d8),
         "[begin, end]"},
        {"offsets reversed", image(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", d8),
         "reversed"},
        {"offsets beyond data",
         image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", d8), "beyond the 8"},
        {"offsets huge",
         image(
             R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[18446744073709551615,18446744073709551615]}})",
             d8),
         "beyond the 8"},
        {"overlap",
         image(
             R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
             d8),
         "overlap"},
        {"gap", image(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", d8), "gap"},
        {"trailing data", image(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", d8),
         "tensors cover 4"},
        {"duplicate name", image(R"({"a":{)" + ok + R"(},"a":{)" + ok + "}}", d8),
         "duplicate key 'a'"},
        {"duplicate field",
         image(R"({"a":{"dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8]}})", d8),
         "duplicate key 'dtype'"},
        {"empty name", image(R"({"":{)" + ok + "}}", d8), "empty tensor name"},
        {"metadata not object", image(R"({"__metadata__":[1]})"), "__metadata__ must be an object"},
        {"metadata not string", image(R"({"__metadata__":{"k":1}})"), "entry 'k' must be a string"},
        {"deep nesting",
         image("{\"a\":" + std::string(200000, '[') + std::string(200000, ']') + "}"),
         "header: nesting deeper than 32 levels"},  // refused before parsing (audit item 1)
        {"unterminated deep nesting", image("{\"a\":" + std::string(200000, '[')),
         "header: nesting deeper than 32 levels"},
        {"invalid UTF-8", image("{\"\xff\":1}"), "invalid JSON"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.what);
        expect_error(c.bytes, c.needle);
    }
}

TEST(Safetensors, EveryTruncationIsAnError) {
    const std::string bytes = serialize_safetensors(sample());
    for (std::size_t len = 0; len < bytes.size(); ++len) {
        EXPECT_THROW(parse_safetensors(std::string_view(bytes).substr(0, len)), Error)
            << "length " << len;
    }
    EXPECT_NO_THROW(parse_safetensors(bytes));
}

TEST(Safetensors, FlippedBytesNeverCrash) {
    // Every byte, three flip patterns: either still a valid file (a data byte, a space of the
    // padding, a letter inside a name) or a nazar::Error. Any other exception fails the test.
    const std::string bytes = serialize_safetensors(sample());
    int errors = 0, ok = 0;
    for (std::size_t i = 0; i < bytes.size(); ++i) {
        for (unsigned char mask : {0x01, 0x20, 0xff}) {
            std::string b = bytes;
            b[i] = static_cast<char>(b[i] ^ mask);
            try {
                parse_safetensors(b);
                ++ok;
            } catch (const Error& e) {
                ++errors;
                EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
            }
        }
    }
    EXPECT_GT(errors, 100);  // the header is most of this file
    EXPECT_GT(ok, 0);
}

TEST(Safetensors, RandomHeaderEditsNeverCrash) {
    // Replaces 1-3 header bytes with JSON-significant characters (digits in offsets and shapes,
    // brackets, quotes, signs): reaches the checks a single bit flip cannot.
    const std::string bytes = serialize_safetensors(sample());
    uint64_t n;
    std::memcpy(&n, bytes.data(), 8);
    const std::string alphabet = "0123456789[]{}\",:-.e \\";
    Rng rng(42);
    for (int iter = 0; iter < 3000; ++iter) {
        std::string b = bytes;
        const int edits = 1 + static_cast<int>(rng.below(3));
        for (int k = 0; k < edits; ++k) b[8 + rng.below(n)] = alphabet[rng.below(alphabet.size())];
        try {
            parse_safetensors(b);
        } catch (const Error& e) {
            EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
        }
    }
}

TEST(Safetensors, MissingTensorsAndMetadataNameThemselves) {
    SafeTensors st = sample();
    st.source = "m.safetensors";
    try {
        st.get("decoder.rnn.weight_ih_l0");
        ADD_FAILURE();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(
                      "'m.safetensors': no tensor named 'decoder.rnn.weight_ih_l0'"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_THROW(st.meta("nazar.vocab"), Error);
    EXPECT_THROW(st.get("bias", Shape{4}), Error);
    EXPECT_NO_THROW(st.get("bias", Shape{3}));
}

struct P {
    Tensor weight{Shape{2, 3}};
    Tensor bias{Shape{2}};
    template <class F>
    void visit(F&& f) {
        f("weight", weight);
        f("bias", bias);
    }
};

TEST(Safetensors, ParamsByName) {
    P params, grad;
    params.weight.fill(1.5f);
    params.bias.fill(-2);
    ParamList list;
    collect_params(params, grad, "generator.", list);
    SafeTensors st;
    st.set_params(list);
    EXPECT_EQ(st.names(), (std::vector<std::string>{"generator.bias", "generator.weight"}));

    P other, other_grad;
    ParamList list2;
    collect_params(other, other_grad, "generator.", list2);
    st.get_params(list2);
    EXPECT_EQ(other.weight.at(1, 2), 1.5f);
    EXPECT_EQ(other.bias[1], -2.0f);

    st.set("generator.bias", Tensor(Shape{3}));
    EXPECT_THROW(st.get_params(list2), Error);  // shape mismatch
    st.erase("generator.bias");
    EXPECT_THROW(st.get_params(list2), Error);  // missing
}

TEST(Safetensors, SerializeRejectsBadNames) {
    SafeTensors st;
    st.set("__metadata__", Tensor(Shape{1}));
    EXPECT_THROW(serialize_safetensors(st), Error);
    SafeTensors st2;
    st2.metadata["k"] = "\xff\xfe";  // not UTF-8: JSON cannot carry it
    EXPECT_THROW(serialize_safetensors(st2), Error);
}

// ---- fileio -----------------------------------------------------------------------------

class FileIo : public ::testing::Test {
protected:
    void SetUp() override {
        std::string templ = ::testing::TempDir() + "nazar-fileio-XXXXXX";
        ASSERT_NE(::mkdtemp(templ.data()), nullptr);
        dir = templ;
    }
    void TearDown() override {
        for (const auto& f : listing()) ::unlink((dir + "/" + f).c_str());
        ::rmdir((dir + "/sub").c_str());
        ::rmdir(dir.c_str());
    }
    std::vector<std::string> listing() const {
        std::vector<std::string> out;
        if (DIR* d = ::opendir(dir.c_str())) {
            while (dirent* e = ::readdir(d))
                if (std::string(e->d_name) != "." && std::string(e->d_name) != "..")
                    out.push_back(e->d_name);
            ::closedir(d);
        }
        return out;
    }
    std::string dir;
};

TEST_F(FileIo, WritesReadsAndReplaces) {
    const std::string path = dir + "/model.safetensors";
    atomic_write_file(path, "first");
    EXPECT_EQ(read_file(path), "first");
    atomic_write_file(path, std::string("sec\0nd", 6));
    EXPECT_EQ(read_file(path), std::string("sec\0nd", 6));
    atomic_write_file(path, "");
    EXPECT_EQ(read_file(path), "");
    EXPECT_EQ(listing(), std::vector<std::string>{"model.safetensors"});  // no temporaries left
    EXPECT_TRUE(file_exists(path));
    EXPECT_FALSE(file_exists(dir));
}

TEST_F(FileIo, ReadErrorsNameThePath) {
    try {
        read_file(dir + "/missing.bin");
        ADD_FAILURE();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("missing.bin': No such file or directory"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_THROW(read_file(dir), Error);  // a directory
    EXPECT_THROW(load_safetensors(dir + "/missing.safetensors"), Error);
}

TEST_F(FileIo, DirectoryTargetKeepsNoTemporary) {
    ASSERT_EQ(::mkdir((dir + "/sub").c_str(), 0755), 0);
    try {
        atomic_write_file(dir + "/sub", "data");  // a directory is refused before any temporary
        ADD_FAILURE();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("/sub'"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
    }
    EXPECT_EQ(listing(), std::vector<std::string>{"sub"});
    EXPECT_THROW(atomic_write_file(dir + "/no/such/dir/f", "x"), Error);
}

TEST_F(FileIo, DiskFullLeavesPreviousFileIntact) {
    // RLIMIT_FSIZE makes write() fail with EFBIG past the limit: the same path as a full disk.
    const std::string path = dir + "/ckpt.safetensors";
    atomic_write_file(path, "previous contents");
    rlimit old{};
    ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
    auto* old_handler = std::signal(SIGXFSZ, SIG_IGN);
    rlimit small = old;
    small.rlim_cur = 4096;
    ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
    std::string err;
    try {
        atomic_write_file(path, std::string(100000, 'x'));
    } catch (const Error& e) {
        err = e.what();
    }
    ::setrlimit(RLIMIT_FSIZE, &old);
    std::signal(SIGXFSZ, old_handler);
    EXPECT_NE(err.find("ckpt.safetensors"), std::string::npos) << err;
    EXPECT_NE(err.find("File too large"), std::string::npos) << err;
    EXPECT_EQ(read_file(path), "previous contents");
    EXPECT_EQ(listing(), std::vector<std::string>{"ckpt.safetensors"});
}

TEST_F(FileIo, SaveLoadSafetensorsFile) {
    const std::string path = dir + "/m.safetensors";
    save_safetensors(path, sample());
    const SafeTensors back = load_safetensors(path);
    EXPECT_EQ(back.source, path);
    EXPECT_EQ(back.get("encoder.embedding.weight").at(1, 0), 4.0f);
    EXPECT_EQ(back.meta("nazar.format"), "1");
    atomic_write_file(path, "garbage!garbage!");
    try {
        load_safetensors(path);
        ADD_FAILURE();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace test_safetensors
}  // namespace nazar
