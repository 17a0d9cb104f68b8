// load_safetensors reads a file piece by piece (FileReader: header, then each tensor into its
// own memory) instead of parsing a whole-file copy: on valid files it gives exactly what
// parse_safetensors gives on the file's bytes, and on every corrupt file it raises the same
// error with the same message (every truncation, every flipped byte, hostile headers, bad
// values), returning nothing; a file that shrinks under FileReader is an error naming it.
#include "nazar/core/fileio.h"
#include "nazar/core/safetensors.h"

#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace nazar {
namespace test_safetensors_stream {
namespace {

class SafetensorsStream : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/nazar_stream_XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr);
        dir = tmpl;
        path = dir + "/m.safetensors";
    }
    void TearDown() override {
        ::unlink(path.c_str());
        ::rmdir(dir.c_str());
    }
    // The outcome of loading `bytes` from a file: its serialization, or "error: <message>".
    std::string load(const std::string& bytes) {
        write(bytes);
        try {
            return serialize_safetensors(load_safetensors(path));
        } catch (const Error& e) {
            return std::string("error: ") + e.what();
        }
    }
    // No fsync, and a new file each time (ext4 flushes a file truncated and rewritten on close):
    // a thousand files per test.
    void write(const std::string& bytes) const {
        ::unlink(path.c_str());
        std::FILE* f = std::fopen(path.c_str(), "wb");
        ASSERT_NE(f, nullptr);
        ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
        ASSERT_EQ(std::fclose(f), 0);
    }
    // The same from memory, under the same name.
    std::string parse(const std::string& bytes) const {
        try {
            return serialize_safetensors(parse_safetensors(bytes, path));
        } catch (const Error& e) {
            return std::string("error: ") + e.what();
        }
    }
    std::string dir, path;
};

template <class T>
std::string raw(std::initializer_list<T> values) {
    std::string out;
    for (T v : values) out.append(reinterpret_cast<const char*>(&v), sizeof(T));
    return out;
}

std::string image(const std::string& header, const std::string& data) {
    const uint64_t n = header.size();
    return std::string(reinterpret_cast<const char*>(&n), 8) + header + data;
}

// F32 tensors of several ranks, an empty one, I8 and BF16 raw tensors, metadata.
std::string sample_bytes() {
    SafeTensors st;
    st.set("a.weight", Tensor::from({2, 3}, std::vector<float>{1, -2, 3, 4.5f, 5, 6}));
    st.set("a.bias", Tensor::from({3}, std::vector<float>{-0.5f, 0.25f, 1e-30f}));
    st.set("scalar", Tensor::from(Shape{}, std::vector<float>{7}));
    st.set("empty", Tensor(Shape{0, 4}));
    st.set_raw("q", {"I8", Shape{2, 3}, std::string("\x01\xff\x7f\x80\x00\x05", 6)});
    st.set("q.scale", Tensor::from({2}, std::vector<float>{0.5f, 0.25f}));
    st.set_raw("b", {"BF16", Shape{3}, raw<uint16_t>({0x3f80, 0xc000, 0x0001})});
    st.metadata["nazar.format"] = "1";
    st.metadata["k"] = "ü";
    return serialize_safetensors(st);
}

TEST_F(SafetensorsStream, ValidFilesGiveTheSameTensors) {
    const std::string bytes = sample_bytes();
    write(bytes);
    const SafeTensors st = load_safetensors(path);
    EXPECT_EQ(st.source, path);
    EXPECT_EQ(st.get("a.weight").at(1, 0), 4.5f);
    EXPECT_EQ(st.raw().at("q").bytes, std::string("\x01\xff\x7f\x80\x00\x05", 6));
    EXPECT_EQ(st.raw().at("b").dtype, "BF16");
    EXPECT_EQ(st.meta("k"), "ü");
    EXPECT_EQ(serialize_safetensors(st), bytes);  // every tensor, byte for byte
    // converted dtypes pass through a buffer of their own
    const std::string conv =
        image(R"({"d":{"dtype":"F64","shape":[2],"data_offsets":[0,16]},)"
              R"("i":{"dtype":"I32","shape":[3],"data_offsets":[16,28]},)"
              R"("l":{"dtype":"I64","shape":[1],"data_offsets":[28,36]}})",
              raw<double>({0.1, -1e30}) + raw<int32_t>({0, -7, 1 << 30}) + raw<int64_t>({-3}));
    EXPECT_EQ(load(conv), parse(conv));
    EXPECT_EQ(load(conv).rfind("error", 0), std::string::npos) << load(conv);
}

TEST_F(SafetensorsStream, EveryTruncationGivesTheSameError) {
    const std::string bytes = sample_bytes();
    for (std::size_t len = 0; len < bytes.size(); ++len) {
        const std::string part = bytes.substr(0, len);
        const std::string got = load(part);
        EXPECT_EQ(got.rfind("error: ", 0), 0u) << "length " << len;
        EXPECT_EQ(got, parse(part)) << "length " << len;
    }
}

TEST_F(SafetensorsStream, EveryFlippedByteGivesTheSameOutcome) {
    const std::string bytes = sample_bytes();
    int errors = 0;
    for (std::size_t i = 0; i < bytes.size(); ++i)
        for (unsigned char flip : {0x01, 0x80, 0xff}) {
            std::string b = bytes;
            b[i] = static_cast<char>(b[i] ^ flip);
            const std::string got = load(b);
            EXPECT_EQ(got, parse(b)) << "byte " << i << " ^ " << int{flip};
            errors += got.rfind("error: ", 0) == 0;
        }
    EXPECT_GT(errors, 100);  // the header's flips are caught
}

TEST_F(SafetensorsStream, HostileHeadersAndValuesGiveTheSameErrors) {
    const std::string d8 = raw<float>({1, 2});
    std::string huge_len(8, '\0');
    const uint64_t big = (100ull << 20) + 1;
    std::memcpy(huge_len.data(), &big, 8);
    const std::vector<std::pair<std::string, std::string>> cases = {
        {huge_len + "{}", "exceeds the 104857600 byte limit"},
        {std::string("\xe8\x03\0\0\0\0\0\0{}", 10), "header length 1000 exceeds the file size 10"},
        {"modelname: x\n", "its first 8 bytes are text"},
        {image("[1,2]", ""), "JSON object"},
        {image(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", d8), "= 12 bytes"},
        {image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", d8), "beyond the 8"},
        {image(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", d8), "gap"},
        {image(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", d8), "tensors cover 4"},
        {image(R"({"a":{"dtype":"F16","shape":[4],"data_offsets":[0,8]}})", d8), "dtype F16"},
        {image(R"({"a":{"dtype":"I8","shape":[3],"data_offsets":[0,8]}})", d8), "= 3 bytes"},
        {image(R"({"i":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})",
               raw<int64_t>({16777217})),
         "16777217 at index 0 is not exactly representable"},
        {image(R"({"d":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})", raw<double>({1e300})),
         "outside float32 range"},
    };
    for (const auto& [bytes, needle] : cases) {
        const std::string got = load(bytes);
        EXPECT_NE(got.find(needle), std::string::npos) << got;
        EXPECT_NE(got.find(path), std::string::npos) << got;
        EXPECT_EQ(got, parse(bytes));
    }
}

TEST_F(SafetensorsStream, NonRegularFilesAndShrinkingFiles) {
    for (const std::string& p : {std::string("/dev/zero"), dir}) {
        try {
            load_safetensors(p);
            ADD_FAILURE() << p;
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("cannot read '" + p + "': it "), std::string::npos)
                << e.what();
        }
    }
    write(std::string(100, 'x'));
    const FileReader f(path);
    EXPECT_EQ(f.size(), 100u);
    std::string buf(60, '\0');
    f.read_at(40, buf.data(), 60);
    ASSERT_EQ(::truncate(path.c_str(), 50), 0);  // shrinks under the reader
    EXPECT_EQ(f.read_some_at(40, buf.data(), 60), 10u);
    try {
        f.read_at(40, buf.data(), 60);
        ADD_FAILURE();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("'" + path + "': it ends at byte 50"),
                  std::string::npos)
            << e.what();
    }
}

}  // namespace
}  // namespace test_safetensors_stream
}  // namespace nazar
