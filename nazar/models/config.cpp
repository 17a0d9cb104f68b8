#include "nazar/models/config.h"

#include <nlohmann/json.hpp>

namespace nazar {
int encoder_output_size(const ModelConfig&) { NZ_FAIL("not yet"); }
int generator_input_size(const ModelConfig&) { NZ_FAIL("not yet"); }
BridgeKind effective_bridge(const ModelConfig&) { NZ_FAIL("not yet"); }
AttentionTiming effective_timing(const ModelConfig&) { NZ_FAIL("not yet"); }
AttentionConfig attention_config(const ModelConfig&) { NZ_FAIL("not yet"); }
std::vector<std::string> validate(const ModelConfig&) { NZ_FAIL("not yet"); }
void validate_and_warn(const ModelConfig&) { NZ_FAIL("not yet"); }
nlohmann::json to_json(const ModelConfig&) { NZ_FAIL("not yet"); }
ModelConfig model_config_from_json(const nlohmann::json&) { NZ_FAIL("not yet"); }
std::string to_json_string(const ModelConfig&) { NZ_FAIL("not yet"); }
ModelConfig model_config_from_string(std::string_view) { NZ_FAIL("not yet"); }
const char* to_string(DecoderKind) { NZ_FAIL("not yet"); }
const char* to_string(BridgeKind) { NZ_FAIL("not yet"); }
const char* to_string(AttentionTiming) { NZ_FAIL("not yet"); }
const char* to_string(CellType) { NZ_FAIL("not yet"); }
DecoderKind parse_decoder_kind(std::string_view) { NZ_FAIL("not yet"); }
BridgeKind parse_bridge_kind(std::string_view) { NZ_FAIL("not yet"); }
AttentionTiming parse_attention_timing(std::string_view) { NZ_FAIL("not yet"); }
CellType parse_cell_type(std::string_view) { NZ_FAIL("not yet"); }
}  // namespace nazar
