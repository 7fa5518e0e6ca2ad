// Hostile schemas: the TypeScript renderer and the schema limits over nested, recursive-looking and huge
// schemas (issue #11 §1: a 10,000-level schema used to overflow the stack; 2,000 levels took 22 s).
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "nested_schemas.h"
#include "text/harmony_typescript.h"

namespace gossamer::text::harmony {
namespace {

using Json = nlohmann::ordered_json;

using testing::nested_items;

// Every level lists its property as required.
std::string nested_properties(int depth) {
  return testing::nested_properties(depth, true);
}

TEST(HarmonyTypescriptLimits, DeepSchemasAreRefusedByTheLimitsAndNeverCrashTheRenderer) {
  for (const int depth : {10, 63, 64, 200, 2000, 20000, 100000}) {
    for (const bool items : {true, false}) {
      const Json schema = Json::parse(items ? nested_items(depth) : nested_properties(depth));
      const auto violation = schema_limit_violation(schema, SchemaLimits{});
      const int json_depth = items ? depth + 1 : 2 * depth + 1;
      EXPECT_EQ(violation.has_value(), json_depth > 64) << depth << " " << items;
      if (violation) {
        EXPECT_NE(violation->find("64 levels"), std::string::npos) << *violation;
      }
      const auto start = std::chrono::steady_clock::now();
      const std::string text = json_schema_to_typescript(schema);  // must not overflow the stack
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      EXPECT_LT(seconds, 2.0) << depth;
      EXPECT_LT(text.size(), size_t{1} << 20) << depth;  // bounded by the render depth, not the input depth
      if (items && depth <= 63) {
        std::string expected = "string";
        for (int i = 0; i < depth; ++i) expected += "[]";
        EXPECT_EQ(text, expected);
      }
    }
  }
}

TEST(HarmonyTypescriptLimits, WithinTheLimitsTheFullSchemaRenders) {
  const std::string text = json_schema_to_typescript(Json::parse(nested_properties(20)));
  EXPECT_EQ(text.find("any"), std::string::npos) << text;
  EXPECT_NE(text.find("p: number,"), std::string::npos);
}

TEST(HarmonyTypescriptLimits, NodeCountLimit) {
  Json wide = {{"type", "object"}, {"properties", Json::object()}, {"required", Json::array()}};
  for (int i = 0; i < 6000; ++i) {
    const std::string name = std::string("p").append(std::to_string(i));
    wide["properties"][name] = {{"type", "string"}};
    wide["required"].push_back(name);
  }
  int64_t nodes = 0;
  const auto violation = schema_limit_violation(wide, SchemaLimits{}, &nodes);
  ASSERT_TRUE(violation.has_value());
  EXPECT_NE(violation->find("10000 JSON values"), std::string::npos) << *violation;
  EXPECT_EQ(schema_limit_violation(wide, SchemaLimits{64, 100000}), std::nullopt);
  // Wide objects render in linear time (required names are a set, not a scan per property).
  const auto start = std::chrono::steady_clock::now();
  const std::string text = json_schema_to_typescript(wide);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 2.0);
  EXPECT_NE(text.find("p5999: string,"), std::string::npos);
  EXPECT_EQ(text.find("?"), std::string::npos);
}

// Random schema-shaped JSON: every keyword the renderer reads, mixed with junk of the wrong types.
Json random_schema(std::mt19937& rng, int depth) {
  std::uniform_int_distribution<int> pick(0, 9);
  const char* types[] = {"object", "array", "string", "integer", "number", "boolean", "null", "weird"};
  Json schema = Json::object();
  if (depth <= 0 || pick(rng) < 2) return pick(rng) < 5 ? Json(types[pick(rng) % 8]) : Json::array({1, "x"});
  schema["type"] = pick(rng) < 8 ? Json(types[pick(rng) % 8]) : Json::array({"string", "null", 3});
  if (pick(rng) < 5) schema["items"] = random_schema(rng, depth - 1);
  if (pick(rng) < 6) {
    Json properties = Json::object();
    for (int i = 0; i < pick(rng) % 4; ++i)
      properties[std::string("k").append(std::to_string(i))] = random_schema(rng, depth - 1);
    schema["properties"] = pick(rng) < 9 ? properties : Json("junk");
  }
  if (pick(rng) < 2) schema["oneOf"] = Json::array({random_schema(rng, depth - 1), random_schema(rng, depth - 1)});
  if (pick(rng) < 2) schema["nullable"] = pick(rng) < 7;
  if (pick(rng) < 2) schema["enum"] = Json::array({"a", 1, nullptr});
  if (pick(rng) < 2) schema["default"] = pick(rng) < 5 ? Json("d") : Json::array({1});
  if (pick(rng) < 2) schema["description"] = pick(rng) < 8 ? Json("text") : Json(7);
  if (pick(rng) < 2) schema["required"] = pick(rng) < 7 ? Json::array({"k0", 5}) : Json("k1");
  if (pick(rng) < 1) schema["examples"] = Json::array({"e", 2});
  if (pick(rng) < 1) schema["title"] = "T";
  return schema;
}

TEST(HarmonyTypescriptLimits, FuzzRandomSchemasRenderWithoutThrowing) {
  std::mt19937 rng(11);
  for (int i = 0; i < 3000; ++i) {
    const Json schema = random_schema(rng, 1 + i % 12);
    EXPECT_NO_THROW({
      const std::string text = json_schema_to_typescript(schema);
      (void)schema_limit_violation(schema, SchemaLimits{});
    }) << schema.dump();
  }
}

}  // namespace
}  // namespace gossamer::text::harmony
