// PyTorch parity harness (docs/design.md §8.4, "Reference").
//
// A fixture (tests/parity/gen/make_fixtures.py) holds a layer's inputs, its parameters by
// state_dict name, its outputs, the loss weights "R.<output>" of L = Σ out ⊙ R, and "grad.<name>"
// for every float input and parameter, computed by python/nazar_torch.py in float64. Fixture
// choice: ${build}/parity-fixtures/<case>.safetensors when present (regenerated live by the CTest
// entry parity.make_fixtures), else the committed tests/parity/fixtures/.
//
//   Fixture f = load_fixture("gru_cell");
//   f.set_params(params);                   // nazar's ParamList <- fixture, names must match both
//   ways
//   ... forward with f["x"], backward with f["R.h_new"] ...
//   f.expect_output("h_new", h_new, 1e-5);  // norm-wise relative error max|a-b| / max|b|
//   f.expect_grad("x", d_x, 1e-5);
//   f.expect_grads(params, 1e-5);           // every parameter gradient by name
//   f.expect_all_compared();                // nothing in the fixture was left unchecked
#pragma once

#include "nazar/core/fileio.h"
#include "nazar/core/params.h"
#include "nazar/core/safetensors.h"
#include "nazar/data/batcher.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace nazar::test {

inline std::string fixture_path(const std::string& name) {
    const std::string live =
        std::string(NAZAR_BINARY_DIR) + "/parity-fixtures/" + name + ".safetensors";
    if (file_exists(live)) return live;
    return std::string(NAZAR_SOURCE_DIR) + "/tests/parity/fixtures/" + name + ".safetensors";
}

inline std::vector<std::string> split_names(const std::string& s) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    for (std::string item; std::getline(ss, item, ',');)
        if (!item.empty()) out.push_back(item);
    return out;
}

class Fixture {
public:
    explicit Fixture(const std::string& name)
        : path(fixture_path(name)), st(load_safetensors(path)) {
        config = nlohmann::json::parse(st.meta("config"));
        ::testing::Test::RecordProperty("fixture", path);
    }

    const Tensor& operator[](const std::string& name) const { return st.get(name); }
    bool has(const std::string& name) const { return st.contains(name); }
    std::vector<std::string> list(const std::string& key) const {
        return split_names(st.meta(key));
    }

    // Integer inputs (ids, lengths) stored as I64, loaded as exact floats.
    std::vector<int> ints(const std::string& name) const {
        const Tensor& t = st.get(name);
        std::vector<int> out(static_cast<std::size_t>(t.numel()));
        for (int64_t i = 0; i < t.numel(); ++i)
            out[static_cast<std::size_t>(i)] = static_cast<int>(t[i]);
        return out;
    }

    // Copies the fixture's parameters into nazar's by name. The two name sets must be equal:
    // a parameter only one side has is a broken weight-naming contract (docs/design.md §5).
    void set_params(const ParamList& params) {
        std::set<std::string> ours, theirs;
        for (const auto& p : params) ours.insert(p.name);
        for (const auto& n : list("params")) theirs.insert(n);
        EXPECT_EQ(ours, theirs) << "parameter names of nazar vs " << path;
        for (const auto& p : params)
            if (theirs.count(p.name)) p.value->copy_from(st.get(p.name, p.value->shape()));
    }

    void expect_output(const std::string& name, ConstTensorView got, double tol) {
        compare(name, got, st.get(name), tol);
        compared_.insert(name);
    }
    void expect_grad(const std::string& name, ConstTensorView got, double tol) {
        compare("grad." + name, got, st.get("grad." + name), tol);
        compared_.insert("grad." + name);
    }
    void expect_grads(const ParamList& params, double tol) {
        for (const auto& p : params) expect_grad(p.name, *p.grad, tol);
    }
    // Every output and every gradient the fixture holds was compared.
    void expect_all_compared() const {
        for (const auto& o : list("outputs"))
            EXPECT_TRUE(compared_.count(o))
                << "output '" << o << "' of " << path << " not compared";
        for (const auto& g : list("grads"))
            EXPECT_TRUE(compared_.count("grad." + g))
                << "gradient '" << g << "' of " << path << " not compared";
    }

    std::string path;
    SafeTensors st;
    nlohmann::json config;

private:
    void compare(const std::string& what, ConstTensorView got, ConstTensorView want,
                 double tol) const {
        ASSERT_EQ(got.numel(), want.numel())
            << what << ": nazar " << got.shape().str() << " vs fixture " << want.shape().str()
            << " (" << path << ")";
        bool finite = true;
        for (int64_t i = 0; i < got.numel(); ++i) finite = finite && std::isfinite(got[i]);
        EXPECT_TRUE(finite) << what << ": nazar produced a non-finite value";
        const double err = max_rel_error(got.reshape(want.shape()), want);
        EXPECT_LE(err, tol) << what << ": max relative error vs PyTorch (" << path << ")";
        ::testing::Test::RecordProperty("rel_err." + what, fmt::format("{:.3g}", err));
    }
    std::set<std::string> compared_;
};

inline Fixture load_fixture(const std::string& name) {
    return Fixture(name);
}

// A model fixture's batch (tests/parity/gen/make_model_fixtures.py, make_copy_fixtures.py), in
// batch_from_ids layout (tgt_in = <s> y, tgt_out = y </s>, pad 0); with the extended ids
// src_copy / tgt_copy where the fixture has them (copy attention).
inline Batch batch_of(const Fixture& f) {
    Batch b;
    b.B = f["src"].dim(0);
    b.S = f["src"].dim(1);
    b.T = f["tgt_in"].dim(1);
    for (int v : f.ints("src")) b.src.push_back(v);
    b.src_lengths = f.ints("src_lengths");
    for (int v : f.ints("tgt_in")) b.tgt_in.push_back(v);
    for (int v : f.ints("tgt_out")) b.tgt_out.push_back(v);
    if (f.has("src_copy"))
        for (int v : f.ints("src_copy")) b.src_copy.push_back(v);
    if (f.has("tgt_copy"))
        for (int v : f.ints("tgt_copy")) b.tgt_copy.push_back(v);
    for (int i = 0; i < b.B; ++i) {
        int n = 0;
        for (int t = 0; t < b.T; ++t) n += b.tgt_out_at(i, t) != 0;
        b.tgt_lengths.push_back(n);
        b.index.push_back(i);
    }
    return b;
}

}  // namespace nazar::test
